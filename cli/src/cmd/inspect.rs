//! `baton inspect NAME`: who holds a lock, who waits, the last fencing token.

use baton::{Client, Inspection};
use serde::Serialize;

use crate::exit::{self, Failure};
use crate::output::{self, Table, human};
use crate::url::StoreChoice;

/// Show a lock's holder, hold count, lease left, last fencing token and known waiters
#[derive(clap::Args, Debug)]
#[command(after_help = exit::HELP)]
pub(crate) struct Args {
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    /// The lock name.
    #[arg(value_name = "NAME")]
    name: String,
}

#[derive(Serialize)]
struct Json<'a> {
    url: String,
    name: &'a str,
    kind: &'a str,
    held: bool,
    holders: Vec<HolderJson<'a>>,
    waiters: &'a [String],
    last_token: Option<u64>,
}

#[derive(Serialize)]
struct HolderJson<'a> {
    owner: &'a str,
    mode: &'a str,
    count: u32,
    token: u64,
    lease_left_ms: Option<f64>,
}

pub(crate) async fn run(args: Args, store: StoreChoice, verbose: bool) -> Result<u8, Failure> {
    exit::check_name(&args.name)?;
    store.announce(true, verbose);
    let client = Client::connect(&store.url).await?;
    let seen = client.inspect(&args.name).await;
    let url = client.url();
    client.close().await;
    let seen = seen?;
    if args.json {
        output::print_json(&to_json(&seen, url))?;
    } else {
        crate::output::print(&render(&seen, &url));
    }
    Ok(0)
}

fn to_json(i: &Inspection, url: String) -> Json<'_> {
    Json {
        url,
        name: &i.name,
        kind: i.kind,
        held: i.is_held(),
        holders: i
            .holders
            .iter()
            .map(|h| HolderJson {
                owner: &h.owner,
                mode: h.mode,
                count: h.count,
                token: h.token.get(),
                lease_left_ms: h.lease_left.map(output::millis),
            })
            .collect(),
        waiters: &i.waiters,
        last_token: i.last_token.map(|t| t.get()),
    }
}

fn render(i: &Inspection, url: &str) -> String {
    let mut out = format!("lock `{}` on {url}\n", i.name);
    if i.holders.is_empty() {
        out.push_str("  holder:      none (free)\n");
    } else {
        let mut t = Table::new(["holder", "mode", "holds", "token", "lease left"]);
        for h in &i.holders {
            let left = h.lease_left.map_or_else(|| "unknown".to_owned(), human);
            t.row(vec![h.owner.clone(), h.mode.to_owned(), h.count.to_string(), h.token.to_string(), left]);
        }
        out.push_str(&t.render("  "));
    }
    let waiters = if i.waiters.is_empty() { "none known".to_owned() } else { i.waiters.join(", ") };
    out.push_str(&format!("  waiters:     {waiters}\n"));
    let last = i.last_token.map_or_else(|| "none (never granted)".to_owned(), |t| t.to_string());
    out.push_str(&format!("  last token:  {last}\n"));
    out
}
