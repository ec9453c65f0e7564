//! The protected resource of the "fenced" column: a Redis value written only through a
//! script that remembers the highest fencing token seen (Kleppmann's fencing: the
//! late write of a holder paused past its lease carries an older token and is refused).

use crate::raw::Raw;
use baton::FencingToken;
use baton::Result;

/// Writes `ARGV[2]` unless `ARGV[1]` (a token; empty: none) is below the highest token
/// already seen. A write without a token cannot be checked and is taken as it comes.
const WRITE: &str = "\
if ARGV[1] ~= '' then
  local last = tonumber(redis.call('get', KEYS[2]) or '0')
  if tonumber(ARGV[1]) < last then return 0 end
  redis.call('set', KEYS[2], ARGV[1])
end
redis.call('set', KEYS[1], ARGV[2])
return 1";

/// A value guarded by fencing tokens (two keys: the value and the highest token seen).
pub struct FencedResource {
    raw: Raw,
}

impl FencedResource {
    /// The resource `key` on the Redis server at `url`.
    ///
    /// # Errors
    /// `InvalidUrl` or `Connection`.
    pub async fn open(url: &str, key: &str) -> Result<FencedResource> {
        Ok(FencedResource { raw: Raw::open(url, key).await? })
    }

    /// Writes `value` on behalf of a holder with `token` (`None`: a scheme without tokens).
    /// `true` when the write was taken, `false` when it was rejected as stale.
    ///
    /// # Errors
    /// `Connection` / `Backend` from the server.
    pub async fn write(&mut self, token: Option<FencingToken>, value: &str) -> Result<bool> {
        let fence = format!("{}:fence", self.raw.key);
        let token = token.map_or_else(String::new, |t| t.get().to_string());
        let mut c = redis::cmd("EVAL");
        c.arg(WRITE).arg(2).arg(&self.raw.key).arg(fence).arg(token).arg(value);
        let n: i64 = self.raw.query(&c).await?;
        Ok(n == 1)
    }

    /// The value last written.
    ///
    /// # Errors
    /// `Connection` / `Backend` from the server.
    pub async fn read(&mut self) -> Result<Option<String>> {
        self.raw.query(&self.raw.cmd("GET")).await
    }
}
