//! Storage Transfer Service: the project's service agent, and the job that mirrors the AWS
//! lane's OpenBao snapshots into the GCP lineage's bucket (it reads S3 through an AWS role that
//! trusts the agent's subject id, made by the shared spec).

pub(crate) mod service_agent;
pub(crate) mod transfer_job;
