//! A criterion measurement counting the requests a client sends to its store
//! (`Client::store_round_trips`) instead of timing: criterion then reports round trips per
//! iteration, with the same sampling, statistics and baselines as for time.

use baton::Client;
use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};

/// Store round trips of one client, for `Criterion::with_measurement`. Only that client's
/// requests count: nothing else may use it while a bench runs.
pub struct RoundTrips {
    client: Client,
}

impl RoundTrips {
    /// `None` when the client's store does not count its round trips (only Redis does).
    pub fn of(client: &Client) -> Option<RoundTrips> {
        client.store_round_trips().map(|_| RoundTrips { client: client.clone() })
    }

    fn now(&self) -> u64 {
        self.client.store_round_trips().unwrap_or(0)
    }
}

impl Measurement for RoundTrips {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        self.now()
    }

    fn end(&self, started: u64) -> u64 {
        self.now().saturating_sub(started)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &TripsFormatter
    }
}

struct TripsFormatter;

impl ValueFormatter for TripsFormatter {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "trips"
    }

    fn scale_throughputs(&self, _typical: f64, throughput: &Throughput, values: &mut [f64]) -> &'static str {
        let per = match throughput {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) | Throughput::Elements(n) => *n as f64,
        };
        for v in values {
            *v /= per.max(1.0);
        }
        "trips/elem"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "trips"
    }
}
