//! Counting cloud API calls: machine-independent cost of a run.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One API operation, e.g. `ec2:DescribeSubnets`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ApiCall {
    pub service: String,
    pub operation: String,
}

impl ApiCall {
    /// Whether the operation only reads (Describe/List/Get/Head...).
    pub fn is_read(&self) -> bool {
        const READ_PREFIXES: [&str; 6] = ["Describe", "List", "Get", "Head", "Lookup", "Search"];
        READ_PREFIXES.iter().any(|p| self.operation.starts_with(p))
    }
}

/// Counts of calls by operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ApiCalls {
    pub by_operation: BTreeMap<String, u64>,
}

impl ApiCalls {
    /// Total number of calls.
    pub fn total(&self) -> u64 {
        self.by_operation.values().sum()
    }

    /// Number of calls that change something.
    pub fn mutating(&self) -> u64 {
        self.by_operation.iter().filter(|(op, _)| !is_read_name(op)).map(|(_, n)| n).sum()
    }

    /// The mutating operations and their counts.
    pub fn mutating_operations(&self) -> BTreeMap<String, u64> {
        self.by_operation
            .iter()
            .filter(|(op, _)| !is_read_name(op))
            .map(|(op, n)| (op.clone(), *n))
            .collect()
    }

    /// Calls made since `earlier`.
    pub fn since(&self, earlier: &ApiCalls) -> ApiCalls {
        let by_operation = self
            .by_operation
            .iter()
            .filter_map(|(op, n)| {
                let d = n - earlier.by_operation.get(op).copied().unwrap_or(0);
                (d > 0).then(|| (op.clone(), d))
            })
            .collect();
        ApiCalls { by_operation }
    }

    /// Adds another set of counts.
    pub fn add(&mut self, other: &ApiCalls) {
        for (op, n) in &other.by_operation {
            *self.by_operation.entry(op.clone()).or_default() += n;
        }
    }
}

fn is_read_name(key: &str) -> bool {
    let (service, operation) = key.split_once(':').unwrap_or(("", key));
    ApiCall { service: service.into(), operation: operation.into() }.is_read()
}

/// A shared counter that providers increment on every call they send.
#[derive(Debug, Clone, Default)]
pub struct ApiCallCounter {
    inner: Arc<Mutex<ApiCalls>>,
}

impl ApiCallCounter {
    /// Records one call.
    pub fn record(&self, call: &ApiCall) {
        let mut calls = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        *calls.by_operation.entry(format!("{}:{}", call.service, call.operation)).or_default() += 1;
    }

    /// The counts so far.
    pub fn snapshot(&self) -> ApiCalls {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_reads_from_writes() {
        let counter = ApiCallCounter::default();
        let call = |op: &str| ApiCall { service: "ec2".into(), operation: op.into() };
        counter.record(&call("DescribeVpcs"));
        let before = counter.snapshot();
        counter.record(&call("CreateVpc"));
        counter.record(&call("DescribeVpcs"));
        let after = counter.snapshot();
        assert_eq!(after.total(), 3);
        assert_eq!(after.mutating(), 1);
        let delta = after.since(&before);
        assert_eq!(delta.total(), 2);
        assert_eq!(delta.mutating_operations().len(), 1);
    }
}
