//! `baton demo`: a flash sale, the classic oversell race. Buyers in separate processes check the
//! stock, think for a moment, and write back stock − 1: a read-modify-write that
//! oversells without a lock and sells exactly the stock with one. With the lock, the stock
//! lives in the store as a fenced value (`Client::fence`) where the store has them, and a
//! last round shows a buyer paused past its lease being refused by the store.

use std::io::BufRead;
#[cfg(unix)]
use std::os::unix::fs::FileExt;
#[cfg(windows)]
use std::os::windows::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::{Client, ErrorKind, Fence, LockOptions};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::exit::{self, Failure};
use crate::output::{self, Table};
use crate::url::StoreChoice;

/// The lock every locked buyer takes.
const LOCK_NAME: &str = "demo/flash-sale";
/// Between reading the stock and writing it back: long enough that every buyer of the
/// unlocked round reads before anyone writes, even on a busy machine.
const THINK: Duration = Duration::from_millis(80);
/// Upper bound on one round, so that a stuck buyer cannot hang the demo.
const ROUND_LIMIT: Duration = Duration::from_secs(60);
/// The fenced value the locked buyers sell from (where the store has fenced writes).
const STOCK_KEY: &str = "demo/flash-sale-stock";
/// The lease of the paused buyer of the last round (etcd's shortest lease is 2 s).
const PAUSED_LEASE: Duration = Duration::from_secs(2);

/// The flash-sale oversell demo: buyers race for the last items, without and with a lock
///
/// BUYERS separate processes (this binary, re-run as buyers) race for STOCK items. Each
/// reads the stock from a shared file, waits a moment, and writes back stock − 1 (a
/// non-atomic read-modify-write). Round 1 uses no lock and oversells; round 2 takes the
/// baton lock `demo/flash-sale` around the same steps and sells exactly STOCK items, each
/// sale carrying a larger fencing token than the one before. In round 2 the stock is a
/// fenced value in the store itself (`demo/flash-sale-stock`: every write carries the
/// buyer's token, and the store refuses a token below one it has seen), where the store
/// has fenced writes (Redis, etcd, SQL); round 3 then pauses a buyer past its lease while
/// another buys, and shows the store refusing the paused buyer's late write.
///
/// The store must be visible to every buyer process: the default embedded SQLite file or
/// any server URL. memory:// lives inside one process, so it is refused.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::HELP)]
pub(crate) struct Args {
    /// Number of buyer processes.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=200))]
    buyers: u32,
    /// Items in stock.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    stock: u32,
    /// Print the rounds as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// One buyer (internal: started by `baton demo`).
#[derive(clap::Args, Debug)]
pub(crate) struct BuyerArgs {
    #[arg(long)]
    id: u32,
    #[arg(long)]
    stock_file: PathBuf,
    /// Take the lock around the read-modify-write.
    #[arg(long)]
    lock: bool,
    /// Sell from the store's fenced stock value instead of the file.
    #[arg(long)]
    fenced: bool,
}

/// What a buyer reports (one JSON line on stdout).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sale {
    buyer: u32,
    /// `sold`, `sold out`, or `refused` (the store refused the write: a later token wrote).
    result: String,
    /// The stock the buyer read (the item number it sold, when it sold).
    seen: i64,
    token: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Round {
    round: u32,
    lock: bool,
    buyers: u32,
    stock: u32,
    sold: u32,
    oversold: u32,
    /// Sales of an item number someone else had sold already.
    duplicate_sales: u32,
    final_stock: i64,
    /// Where the stock lived: `file` or `fenced` (a fenced value in the store).
    stock_in: &'static str,
    elapsed_ms: f64,
    sales: Vec<Sale>,
}

/// Round 3: a buyer paused past its lease writes late.
#[derive(Debug, Serialize)]
struct Paused {
    /// The paused buyer's token, and the token of the buyer that took over.
    paused_token: u64,
    next_token: u64,
    /// Whether the store refused the paused buyer's write (it must).
    refused: bool,
    final_stock: i64,
}

#[derive(Serialize)]
struct Report {
    url: String,
    lock_name: &'static str,
    rounds: Vec<Round>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paused: Option<Paused>,
}

pub(crate) async fn run(args: Args, store: StoreChoice, verbose: bool) -> Result<u8, Failure> {
    if store.scheme().as_deref() == Some("memory") {
        return Err(Failure::usage(
            "baton demo runs its buyers as separate processes, and memory:// lives inside one \
             process; use the default (an embedded SQLite file), sqlite:///path/demo.db, or a server URL",
        ));
    }
    store.announce(true, verbose);
    // Connecting once here creates the store before many buyers race to create it, and
    // reports a bad URL once instead of once per buyer.
    let client = Client::connect(&store.url).await?;
    let url = client.url();
    let fenced = has_fence(&client).await?;

    let dir = std::env::temp_dir().join(format!("baton-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| io_failure(&dir, &e))?;
    let stock_file = dir.join("stock");
    let mut rounds = Vec::new();
    let mut result = Ok(());
    if !args.json {
        crate::output::out!(
            "baton demo: a flash sale on {url}\n\
             each buyer is a process that reads the stock, thinks for {}ms, then writes stock - 1\n",
            THINK.as_millis()
        );
    }
    for (n, lock) in [(1, false), (2, true)] {
        if !args.json {
            let how = if lock { format!("with the baton lock `{LOCK_NAME}`") } else { "no lock".to_owned() };
            crate::output::out!("round {n}: {} buyers race for {} items, {how}", args.buyers, args.stock);
        }
        let fenced = lock && fenced;
        if fenced {
            reset_fenced_stock(&client, args.stock).await?;
        }
        match round(n, lock, fenced, &args, &store.url, &stock_file).await {
            Ok(r) => {
                if !args.json {
                    crate::output::print(&render(&r));
                }
                rounds.push(r);
            }
            Err(f) => {
                result = Err(f);
                break;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    let paused = if fenced { Some(paused_round(&client, &args, &store.url).await?) } else { None };
    client.close().await;
    if args.json {
        output::print_json(&Report { url, lock_name: LOCK_NAME, rounds, paused })?;
        return Ok(0);
    }
    if let Some(p) = &paused {
        crate::output::out!(
            "round 3: a buyer holding token {} pauses past its {}s lease; a buyer with token {} takes the lock and sells\n  \
             => the paused buyer's late write with token {} was {} by the store; the stock says {}\n",
            p.paused_token,
            PAUSED_LEASE.as_secs(),
            p.next_token,
            p.paused_token,
            if p.refused { "REFUSED" } else { "TAKEN (fencing failed)" },
            p.final_stock
        );
    }
    if rounds[1].oversold > 0 {
        return Err(Failure::new(exit::SOFTWARE, "the locked round oversold: the lock did not exclude"));
    }
    if paused.is_some_and(|p| !p.refused) {
        return Err(Failure::new(exit::SOFTWARE, "the store took a paused holder's stale write"));
    }
    Ok(0)
}

/// Whether the store has fenced writes (it then holds the locked round's stock).
async fn has_fence(client: &Client) -> Result<bool, Failure> {
    match client.fence().read(STOCK_KEY).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::Unsupported => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Puts `stock` in the fenced value, with a token above every earlier one: a fresh grant's.
async fn reset_fenced_stock(client: &Client, stock: u32) -> Result<(), Failure> {
    let guard = client.lock(LOCK_NAME).acquire_timeout(Duration::from_secs(30)).await?;
    client.fence().write(STOCK_KEY, &stock.to_string(), guard.token()).await?;
    guard.release().await?;
    Ok(())
}

/// Round 3: one buyer takes the lock with a short lease, reads the stock and stops (a GC
/// pause, a SIGSTOP); its lease runs out, another buyer takes the lock and sells; then the
/// paused buyer wakes and writes back what it computed, with its old token.
async fn paused_round(client: &Client, args: &Args, url: &str) -> Result<Paused, Failure> {
    reset_fenced_stock(client, args.stock).await?;
    let fence = client.fence();
    let paused = client.lock_with(LOCK_NAME, LockOptions::new().ttl(PAUSED_LEASE)).acquire().await?;
    let seen = fenced_stock(&fence).await?;
    // The other buyer: its own connection, as another process would have.
    let other = Client::connect(url).await?;
    let next = other.lock(LOCK_NAME).acquire_timeout(Duration::from_secs(30)).await?;
    let theirs = fenced_stock(&other.fence()).await?;
    other.fence().write(STOCK_KEY, &(theirs - 1).to_string(), next.token()).await?;
    let next_token = next.token().get();
    next.release().await?;
    other.close().await;
    let taken = fence.write(STOCK_KEY, &(seen - 1).to_string(), paused.token()).await?;
    let paused_token = paused.token().get();
    let _ = paused.release().await; // lost long ago
    Ok(Paused { paused_token, next_token, refused: !taken, final_stock: fenced_stock(&fence).await? })
}

async fn fenced_stock(fence: &Fence) -> Result<i64, Failure> {
    let v = fence.read(STOCK_KEY).await?.ok_or_else(|| Failure::new(exit::SOFTWARE, "the fenced stock is gone"))?;
    v.value
        .parse()
        .map_err(|_| Failure::new(exit::SOFTWARE, format!("the fenced stock is not a number: {:?}", v.value)))
}

async fn round(n: u32, lock: bool, fenced: bool, args: &Args, url: &str, stock_file: &Path) -> Result<Round, Failure> {
    write_stock(stock_file, i64::from(args.stock))?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot find baton's own path: {e}")))?;
    let mut buyers = Vec::new();
    for id in 1..=args.buyers {
        let mut cmd = Command::new(&exe);
        cmd.arg("demo-buyer").arg("--url").arg(url).arg("--id").arg(id.to_string()).arg("--stock-file").arg(stock_file);
        if lock {
            cmd.arg("--lock");
        }
        if fenced {
            cmd.arg("--fenced");
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot start a buyer: {e}")))?;
        let stdout =
            child.stdout.take().ok_or_else(|| Failure::new(exit::SOFTWARE, "a buyer's stdout is not piped"))?;
        let out = BufReader::new(stdout).lines();
        buyers.push((child, out));
    }
    let started = std::time::Instant::now();
    let sales = tokio::time::timeout(ROUND_LIMIT, race(&mut buyers)).await.map_err(|_| {
        Failure::new(exit::SOFTWARE, format!("round {n} took longer than {}s; buyers stopped", ROUND_LIMIT.as_secs()))
    })??;
    let elapsed = started.elapsed();
    let mut sales = sales;
    sales.sort_by_key(|s| (s.token, s.buyer));
    let sold = sales.iter().filter(|s| s.result == "sold").count() as u32;
    let mut items: Vec<i64> = sales.iter().filter(|s| s.result == "sold").map(|s| s.seen).collect();
    items.sort_unstable();
    items.dedup();
    Ok(Round {
        round: n,
        lock,
        buyers: args.buyers,
        stock: args.stock,
        sold,
        oversold: sold.saturating_sub(args.stock),
        duplicate_sales: sold - items.len() as u32,
        final_stock: if fenced { final_fenced_stock(url).await? } else { read_stock(stock_file)? },
        stock_in: if fenced { "fenced" } else { "file" },
        elapsed_ms: output::millis(elapsed),
        sales,
    })
}

type Buyer = (Child, tokio::io::Lines<BufReader<ChildStdout>>);

/// Start barrier, then collect every buyer's sale.
async fn race(buyers: &mut [Buyer]) -> Result<Vec<Sale>, Failure> {
    // Every buyer says "ready" once started (and connected); only then do all get the same
    // start instant, so process start-up time cannot spread them out.
    for (child, out) in buyers.iter_mut() {
        match out.next_line().await {
            Ok(Some(l)) if l == "ready" => {}
            _ => return Err(buyer_failed(child).await),
        }
    }
    let start = unix_nanos() + 30_000_000;
    for (child, _) in buyers.iter_mut() {
        let Some(stdin) = child.stdin.as_mut() else {
            return Err(Failure::new(exit::SOFTWARE, "a buyer's stdin is not piped"));
        };
        if stdin.write_all(format!("{start}\n").as_bytes()).await.is_err() {
            return Err(buyer_failed(child).await);
        }
    }
    let mut sales = Vec::with_capacity(buyers.len());
    for (child, out) in buyers.iter_mut() {
        let line = out.next_line().await.ok().flatten();
        match line.and_then(|l| serde_json::from_str::<Sale>(&l).ok()) {
            Some(sale) => sales.push(sale),
            None => return Err(buyer_failed(child).await),
        }
        let _ = child.wait().await;
    }
    Ok(sales)
}

/// A failure message carrying what the buyer printed on stderr.
async fn buyer_failed(child: &mut Child) -> Failure {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = tokio::time::timeout(Duration::from_secs(5), tokio::io::AsyncReadExt::read_to_string(&mut e, &mut err))
            .await;
    }
    let status = child.wait().await.map(|s| s.to_string()).unwrap_or_default();
    Failure::new(exit::SOFTWARE, format!("a buyer failed ({status}): {}", err.trim()))
}

fn render(r: &Round) -> String {
    let mut t = Table::new(["buyer", "result", "saw stock", "fencing token"]);
    for s in &r.sales {
        t.row(vec![
            s.buyer.to_string(),
            s.result.clone(),
            s.seen.to_string(),
            s.token.map_or("-".into(), |t| t.to_string()),
        ]);
    }
    let verdict = if r.oversold > 0 {
        format!("OVERSOLD by {} ({} duplicate sales of the same item)", r.oversold, r.duplicate_sales)
    } else {
        "no oversell".to_owned()
    };
    format!(
        "{}  => round {}: sold {} of {} in stock: {verdict}; the {} says {} ({})\n\n",
        t.render("  "),
        r.round,
        r.sold,
        r.stock,
        if r.stock_in == "fenced" { "fenced stock in the store" } else { "stock file" },
        r.final_stock,
        output::human(Duration::from_secs_f64(r.elapsed_ms / 1e3)),
    )
}

/// The buyer process.
pub(crate) async fn buyer(args: BuyerArgs, url: &str) -> Result<u8, Failure> {
    let client = if args.lock { Some(Client::connect(url).await?) } else { None };
    let lock = client.as_ref().map(|c| c.lock(LOCK_NAME));
    crate::output::out!("ready");
    // Blocking read: nothing else needs this runtime until the race starts.
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(|e| Failure::new(exit::IOERR, format!("stdin: {e}")))?;
    let start: u128 = line.trim().parse().map_err(|_| Failure::usage(format!("bad start instant {line:?}")))?;
    let now = unix_nanos();
    if start > now {
        tokio::time::sleep(Duration::from_nanos((start - now) as u64)).await;
    }

    let guard = match &lock {
        Some(l) => Some(l.acquire_timeout(Duration::from_secs(30)).await?),
        None => None,
    };
    // The flawed critical section: check, think, decrement.
    let fence = client.as_ref().filter(|_| args.fenced).map(Client::fence);
    let seen = match &fence {
        Some(f) => fenced_stock(f).await?,
        None => read_stock(&args.stock_file)?,
    };
    let result = if seen > 0 {
        tokio::time::sleep(THINK).await;
        match (&fence, &guard) {
            (Some(f), Some(g)) if !f.write(STOCK_KEY, &(seen - 1).to_string(), g.token()).await? => "refused",
            (Some(_), _) => "sold",
            _ => {
                write_stock(&args.stock_file, seen - 1)?;
                "sold"
            }
        }
    } else {
        "sold out"
    };
    let token = guard.as_ref().map(|g| g.token().get());
    if let Some(g) = guard {
        g.release().await?;
    }
    if let Some(c) = client {
        c.close().await;
    }
    let sale = Sale { buyer: args.id, result: result.to_owned(), seen, token };
    crate::output::out!("{}", serde_json::to_string(&sale).unwrap_or_default());
    Ok(0)
}

async fn final_fenced_stock(url: &str) -> Result<i64, Failure> {
    let client = Client::connect(url).await?;
    let stock = fenced_stock(&client.fence()).await;
    client.close().await;
    stock
}

fn unix_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

fn io_failure(path: &Path, e: &std::io::Error) -> Failure {
    Failure::new(exit::IOERR, format!("{}: {e}", path.display()))
}

fn read_stock(path: &Path) -> Result<i64, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| io_failure(path, &e))?;
    text.trim().parse().map_err(|_| Failure::new(exit::IOERR, format!("{}: not a number: {text:?}", path.display())))
}

/// Overwrites the number in place with one fixed-width write, so that a concurrent reader
/// sees the old or the new number, never a truncated file: the race stays a clean
/// lost-update race instead of a parse error.
fn write_stock(path: &Path, stock: i64) -> Result<(), Failure> {
    let file = std::fs::OpenOptions::new().create(true).write(true).truncate(false).open(path);
    let file = file.map_err(|e| io_failure(path, &e))?;
    let line = format!("{stock:>20}\n");
    #[cfg(unix)]
    let written = file.write_all_at(line.as_bytes(), 0);
    // One positioned write of 21 bytes (Windows has no write_all_at).
    #[cfg(windows)]
    let written = file.seek_write(line.as_bytes(), 0).and_then(|n| {
        if n == line.len() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!("short write: {n} of {} bytes", line.len())))
        }
    });
    written.map_err(|e| io_failure(path, &e))
}
