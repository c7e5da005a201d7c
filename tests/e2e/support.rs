//! Shared helpers of the end-to-end tests.

use engine::spec::SpecSource;
use engine::{Engine, EngineBuilder, LocalBackend};
use engine_aws::AwsProvider;
use engine_lanes::{Lane, LaneBuilder};
use engine_state::{Backend, RemoteBackend, StateError};
use engine_tests::{BaoServer, Moto};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The lane of `spec_text` (as `specs/aws.toml`) as the binary wires it, with AWS at
/// `aws_config`, and an engine builder with the spec and the lane's providers.
pub async fn lane(aws_config: aws_config::SdkConfig, spec_text: &str) -> (EngineBuilder, Lane) {
    let spec = SpecSource::from_text("specs/aws.toml", "aws", spec_text);
    let lane = LaneBuilder::new(&spec).aws_config(aws_config).build().await;
    (lane.add_to(Engine::builder().spec(spec)), lane)
}

/// An engine for `spec_text` against `moto`, with state in `dir`.
pub async fn engine(moto: &Moto, spec_text: &str, dir: &Path) -> (Engine, Arc<AwsProvider>) {
    let (builder, lane) = lane(moto.sdk_config().await, spec_text).await;
    let engine = builder
        .state(LocalBackend::new(dir.join("aws.state.json")))
        .retry_backoff(Duration::from_millis(50))
        .build()
        .expect("spec is valid");
    (engine, lane.aws)
}

/// Counts of what exists in the emulator carrying the spec's ownership tag.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Owned {
    pub vpcs: usize,
    pub subnets: usize,
    pub route_tables: usize,
    pub internet_gateways: usize,
    pub nat_gateways: usize,
    pub eips: usize,
    pub security_groups: usize,
    pub endpoints: usize,
    pub flow_logs: usize,
    pub private_zones: usize,
    pub roles: usize,
    pub log_groups: usize,
}

impl Owned {
    pub fn total(&self) -> usize {
        self.vpcs
            + self.subnets
            + self.route_tables
            + self.internet_gateways
            + self.nat_gateways
            + self.eips
            + self.security_groups
            + self.endpoints
            + self.flow_logs
            + self.private_zones
            + self.roles
            + self.log_groups
    }
}

fn owned_filter() -> aws_sdk_ec2::types::Filter {
    aws_sdk_ec2::types::Filter::builder().name("tag:engine:spec").values("aws").build()
}

/// Reads the emulator with a client of its own (not the engine's).
pub async fn owned(moto: &Moto) -> Owned {
    let config = moto.sdk_config().await;
    let ec2 = aws_sdk_ec2::Client::new(&config);
    let r53 = aws_sdk_route53::Client::new(&config);
    let iam = aws_sdk_iam::Client::new(&config);
    let logs = aws_sdk_cloudwatchlogs::Client::new(&config);
    let f = owned_filter;
    let nat_gateways = ec2
        .describe_nat_gateways()
        .filter(f())
        .send()
        .await
        .unwrap()
        .nat_gateways()
        .iter()
        .filter(|n| !matches!(n.state(), Some(aws_sdk_ec2::types::NatGatewayState::Deleted)))
        .count();
    let zones = r53.list_hosted_zones().send().await.unwrap();
    let private_zones =
        zones.hosted_zones().iter().filter(|z| z.name().starts_with("priv.aws.")).count();
    let roles = iam
        .list_roles()
        .send()
        .await
        .unwrap()
        .roles()
        .iter()
        .filter(|r| r.role_name().starts_with("aws-0-"))
        .count();
    let log_groups = logs
        .describe_log_groups()
        .log_group_name_prefix("/aws/vpc/aws-0")
        .send()
        .await
        .unwrap()
        .log_groups()
        .len();
    Owned {
        vpcs: ec2.describe_vpcs().filters(f()).send().await.unwrap().vpcs().len(),
        subnets: ec2.describe_subnets().filters(f()).send().await.unwrap().subnets().len(),
        route_tables: ec2
            .describe_route_tables()
            .filters(f())
            .send()
            .await
            .unwrap()
            .route_tables()
            .len(),
        internet_gateways: ec2
            .describe_internet_gateways()
            .filters(f())
            .send()
            .await
            .unwrap()
            .internet_gateways()
            .len(),
        nat_gateways,
        eips: ec2.describe_addresses().filters(f()).send().await.unwrap().addresses().len(),
        security_groups: ec2
            .describe_security_groups()
            .filters(f())
            .send()
            .await
            .unwrap()
            .security_groups()
            .len(),
        endpoints: ec2
            .describe_vpc_endpoints()
            .filters(f())
            .send()
            .await
            .unwrap()
            .vpc_endpoints()
            .iter()
            .filter(|e| !e.state().is_some_and(|s| s.as_str().eq_ignore_ascii_case("deleted")))
            .count(),
        flow_logs: ec2.describe_flow_logs().filter(f()).send().await.unwrap().flow_logs().len(),
        private_zones,
        roles,
        log_groups,
    }
}

/// What the reference spec builds (single NAT, 3 AZs, 4 tiers).
pub fn reference_counts() -> Owned {
    Owned {
        vpcs: 1,
        subnets: 12,
        route_tables: 3,
        internet_gateways: 1,
        nat_gateways: 1,
        eips: 1,
        security_groups: 1,
        endpoints: 1,
        flow_logs: 1,
        private_zones: 1,
        roles: 1,
        log_groups: 1,
    }
}

/// Resources in the reference spec's plan.
pub const REFERENCE_RESOURCES: usize = 44;

/// A fresh offline PKI in `dir/pki` and a server certificate for `localhost` under it: the
/// root, and the files of the leaf's chain and key.
pub fn localhost_leaf(dir: &Path) -> (engine_pki::RootCa, PathBuf, PathBuf) {
    let root = engine_pki::init_root(&dir.join("pki")).unwrap();
    let inter = engine_pki::intermediate(&root, "aws").unwrap();
    let leaf = engine_pki::server_leaf(&inter, &["localhost"]).unwrap();
    let (chain, key) = (dir.join("leaf-chain.pem"), dir.join("leaf-key.pem"));
    std::fs::write(&chain, &leaf.chain_pem).unwrap();
    std::fs::write(&key, leaf.key_pem().expose()).unwrap();
    (root, chain, key)
}

/// A real OpenBao (raft, TLS from [`localhost_leaf`], transit auto-unseal), uninitialised; the
/// transit server must live as long as it; the leaf's chain and key files.
pub async fn openbao(dir: &Path) -> (BaoServer, BaoServer, engine_pki::RootCa, PathBuf, PathBuf) {
    let (root, chain, key) = localhost_leaf(dir);
    let chain_pem = std::fs::read_to_string(&chain).unwrap();
    let key_pem = std::fs::read_to_string(&key).unwrap();
    let (server, transit) = BaoServer::auto_unsealed(&chain_pem, &key_pem, &root.cert_pem).await;
    (server, transit, root, chain, key)
}

/// A spec (in `dir`) that initialises the OpenBao at `address` and enables `mounts`.
pub fn openbao_spec(dir: &Path, address: &str, mounts: &[&str]) -> PathBuf {
    let mut text = format!(
        "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\n\
         domain = \"example.test\"\n\n[openbao]\naddress = \"{address}\"\n\
         ca_file = \"pki/root-ca.crt\"\n\n[openbao.init]\nsecret_prefix = \"openbao/aws-0\"\n"
    );
    for mount in mounts {
        text.push_str(&format!("\n[openbao.mounts.{mount}]\ntype = \"kv-v2\"\n"));
    }
    let spec = dir.join("aws.toml");
    std::fs::write(&spec, text).unwrap();
    spec
}

/// `rounds` rounds of every backend taking the lock at once: each round exactly one holds it,
/// every other is refused within 5 s naming the winner, and the lock is released after.
pub fn exactly_one_wins_each_round(backends: &[Arc<RemoteBackend>], rounds: usize) {
    let contenders = backends.len();
    for round in 0..rounds {
        let start = Arc::new(Barrier::new(contenders));
        let tried = Arc::new(Barrier::new(contenders));
        let contenders: Vec<_> = backends
            .iter()
            .map(|backend| {
                let (backend, start, tried) = (backend.clone(), start.clone(), tried.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let started = Instant::now();
                    let taken = backend.lock("apply");
                    let took = started.elapsed();
                    tried.wait(); // the winner holds its lease until both have tried
                    (taken, took)
                })
            })
            .collect();
        let results: Vec<_> = contenders.into_iter().map(|c| c.join().unwrap()).collect();
        let winners: Vec<_> = results.iter().filter_map(|(r, _)| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one holds the lease");
        let winner = winners[0].holder().id.clone();
        for (result, took) in &results {
            if let Err(e) = result {
                match e {
                    StateError::Locked { holder, .. } => {
                        assert_eq!(holder.id, winner, "round {round}")
                    }
                    other => panic!("round {round}: expected Locked, got {other}"),
                }
                assert!(*took < Duration::from_secs(5), "round {round}: refused fast ({took:?})");
            }
        }
        drop(results);
        assert!(backends[0].lock_status().unwrap().is_none(), "round {round}: released");
    }
}
