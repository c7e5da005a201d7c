//! The network stage: VPC, subnets, gateways, routes, endpoint, security group, DNS zone,
//! flow logs. One file per kind.

mod expand;
pub mod spec;

mod eip;
mod flow_log;
mod iam_role;
mod internet_gateway;
mod log_group;
pub(crate) mod lookup;
mod nat_gateway;
mod route;
mod route53_zone;
mod route_table;
mod route_table_association;
mod security_group;
mod security_group_rule;
mod subnet;
mod vpc;
mod vpc_cidr_association;
mod vpc_endpoint;

pub use expand::STAGE;

use crate::provider::Shared;
use engine::spec::{FieldPath, Globals, SpecErrors, SpecSource};
use engine::{Kind, ResourceSpec};
use std::sync::Arc;

/// Validates `[network]` (if present) and expands it.
pub fn expand(spec: &SpecSource, globals: &Globals) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(net) = spec.section::<spec::NetworkSpec>("network")? else {
        return Ok(vec![]);
    };
    let mut errors = spec::validate(spec, globals, &net);
    if globals.cloud != "aws" {
        errors.push(spec.error(
            &FieldPath::root("globals").key("cloud"),
            "`[network]` here is the AWS network",
        ));
    }
    spec.errors(errors).into_result()?;
    Ok(expand::resources(&spec.name(), globals, &net))
}

/// The network kinds.
pub(crate) fn kinds(shared: &Arc<Shared>) -> Vec<Arc<dyn Kind>> {
    vec![
        Arc::new(vpc::Vpc(shared.clone())),
        Arc::new(vpc_cidr_association::VpcCidrAssociation(shared.clone())),
        Arc::new(subnet::Subnet(shared.clone())),
        Arc::new(internet_gateway::InternetGateway(shared.clone())),
        Arc::new(internet_gateway::InternetGatewayAttachment(shared.clone())),
        Arc::new(eip::Eip(shared.clone())),
        Arc::new(nat_gateway::NatGateway(shared.clone())),
        Arc::new(route_table::RouteTable(shared.clone())),
        Arc::new(route::Route(shared.clone())),
        Arc::new(route_table_association::RouteTableAssociation(
            shared.clone(),
        )),
        Arc::new(vpc_endpoint::VpcEndpoint(shared.clone())),
        Arc::new(security_group::SecurityGroup(shared.clone())),
        Arc::new(security_group_rule::SecurityGroupRule(shared.clone())),
        Arc::new(route53_zone::Route53Zone(shared.clone())),
        Arc::new(log_group::LogGroup(shared.clone())),
        Arc::new(iam_role::IamRole(shared.clone())),
        Arc::new(iam_role::IamRolePolicy(shared.clone())),
        Arc::new(flow_log::FlowLog(shared.clone())),
    ]
}
