//! `gcp_storage_transfer_job`: a Storage Transfer job that copies an S3 bucket into a Cloud
//! Storage bucket on a schedule, reading S3 through an AWS role (federated identity: no AWS
//! key anywhere). Jobs carry no labels; the spec names the job (`transferJobs/NAME`), so one
//! of that name in the project is the spec's. A delete only marks a job `DELETED` and Google
//! keeps its name for 30 days: such a job reads as absent, and making it again under the same
//! name is refused until then (the error says so).

use crate::GcpClients;
use crate::compute::read_each;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_storagetransfer_v1::model::{
    AwsS3Data, GcsData, Schedule, TransferJob as Body, TransferOptions, TransferSpec,
    UpdateTransferJobRequest, transfer_job::Status, transfer_options::OverwriteWhen,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct TransferJob {
    /// `transferJobs/openbao-snapshot-mirror`.
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub description: String,
    /// The S3 bucket read.
    #[attr(in_place)]
    pub source_bucket: String,
    /// The AWS role the service agent assumes to read it.
    #[attr(in_place)]
    pub role_arn: String,
    /// The Cloud Storage bucket written, and the prefix the objects go under.
    #[attr(in_place)]
    pub sink_bucket: String,
    #[attr(in_place)]
    pub sink_path: String,
    /// `NEVER`, `DIFFERENT` or `ALWAYS`.
    #[attr(in_place)]
    pub overwrite_when: String,
    /// Whether objects only the sink has are deleted, and whether the source's objects are
    /// deleted once copied (a mirror that never deletes: both false).
    #[attr(in_place)]
    pub delete_unique_in_sink: bool,
    #[attr(in_place)]
    pub delete_from_source: bool,
    /// The first day it runs (`YYYY-MM-DD`) and how often then; the API cannot change a
    /// job's schedule.
    #[attr(replace)]
    pub start_date: String,
    #[attr(replace)]
    pub repeat_seconds: i64,
    /// `ENABLED` or `DISABLED`.
    #[attr(in_place)]
    pub status: String,
}

pub(crate) struct TransferJobKind(pub Arc<GcpClients>);

fn date_of(text: &str) -> KindResult<google_cloud_type::model::Date> {
    let parts: Vec<i32> = text.split('-').filter_map(|p| p.parse().ok()).collect();
    match parts.as_slice() {
        [year, month, day] => Ok(google_cloud_type::model::Date::new()
            .set_year(*year)
            .set_month(*month)
            .set_day(*day)),
        _ => Err(KindError::new(format!("`{text}` is not a date (YYYY-MM-DD)"))),
    }
}

fn status_of(text: &str) -> Status {
    match text {
        "DISABLED" => Status::Disabled,
        _ => Status::Enabled,
    }
}

fn overwrite_of(text: &str) -> OverwriteWhen {
    match text {
        "ALWAYS" => OverwriteWhen::Always,
        "DIFFERENT" => OverwriteWhen::Different,
        _ => OverwriteWhen::Never,
    }
}

fn spec_of(desired: &TransferJob) -> TransferSpec {
    let source =
        AwsS3Data::new().set_bucket_name(&desired.source_bucket).set_role_arn(&desired.role_arn);
    let sink = GcsData::new().set_bucket_name(&desired.sink_bucket).set_path(&desired.sink_path);
    let options = TransferOptions::new()
        .set_overwrite_when(overwrite_of(&desired.overwrite_when))
        .set_delete_objects_unique_in_sink(desired.delete_unique_in_sink)
        .set_delete_objects_from_source_after_transfer(desired.delete_from_source);
    TransferSpec::new()
        .set_aws_s3_data_source(source)
        .set_gcs_data_sink(sink)
        .set_transfer_options(options)
}

/// The job as the spec's fields, or `None` for a deleted one (its name is still taken).
fn attrs_of(job: &Body) -> Option<TransferJob> {
    if job.status == Status::Deleted {
        return None;
    }
    let spec = job.transfer_spec.clone().unwrap_or_default();
    let source = spec.aws_s3_data_source().cloned().unwrap_or_default();
    let sink = spec.gcs_data_sink().cloned().unwrap_or_default();
    let options = spec.transfer_options.clone().unwrap_or_default();
    let schedule = job.schedule.clone().unwrap_or_default();
    let start = schedule.schedule_start_date.clone().unwrap_or_default();
    let overwrite = match options.overwrite_when {
        OverwriteWhen::Always => "ALWAYS",
        OverwriteWhen::Different => "DIFFERENT",
        _ => "NEVER",
    };
    Some(TransferJob {
        name: job.name.clone(),
        description: job.description.clone(),
        source_bucket: source.bucket_name.clone(),
        role_arn: source.role_arn.clone(),
        sink_bucket: sink.bucket_name.clone(),
        sink_path: sink.path.clone(),
        overwrite_when: overwrite.to_string(),
        delete_unique_in_sink: options.delete_objects_unique_in_sink,
        delete_from_source: options.delete_objects_from_source_after_transfer,
        start_date: format!("{:04}-{:02}-{:02}", start.year, start.month, start.day),
        repeat_seconds: schedule.repeat_interval.map(|d| d.seconds()).unwrap_or(86400),
        status: if job.status == Status::Disabled { "DISABLED" } else { "ENABLED" }.to_string(),
    })
}

impl TransferJobKind {
    async fn get(&self, name: &str) -> KindResult<Option<Live<TransferJob>>> {
        self.0.count("storagetransfer", "GetTransferJob");
        let call =
            self.0.transfer.get_transfer_job().set_job_name(name).set_project_id(&self.0.project);
        let Some(job) = call.send().await.or_absent("storagetransfer:GetTransferJob")? else {
            return Ok(None);
        };
        Ok(attrs_of(&job).map(|attrs| Live::new(job.name.clone(), attrs)))
    }

    async fn read_back(&self, name: &str) -> Outcome<Self> {
        self.get(name).await?.ok_or_else(|| {
            KindError::retryable(format!("storagetransfer:GetTransferJob: {name} is not there yet"))
        })
    }
}

impl TypedKind for TransferJobKind {
    type Attrs = TransferJob;
    const NAME: &'static str = "gcp_storage_transfer_job";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(
            requests,
            |d: &TransferJob| d.name.clone(),
            |name| async move { self.get(&name).await },
        )
        .await
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.0.count("storagetransfer", "CreateTransferJob");
        let schedule = Schedule::new()
            .set_schedule_start_date(date_of(&desired.start_date)?)
            .set_repeat_interval(google_cloud_wkt::Duration::clamp(desired.repeat_seconds, 0));
        let body = Body::new()
            .set_name(&desired.name)
            .set_project_id(&self.0.project)
            .set_description(&desired.description)
            .set_transfer_spec(spec_of(desired))
            .set_schedule(schedule)
            .set_status(status_of(&desired.status));
        let call = self.0.transfer.create_transfer_job().set_transfer_job(body);
        match call.send().await.api("storagetransfer:CreateTransferJob") {
            Ok(_) => {}
            Err(e) if e.already_exists => {
                // Ours from a run that lost the answer, or a deleted job still holding the name.
                if let Some(found) = self.get(&desired.name).await? {
                    return Ok(found);
                }
                return Err(KindError::new(format!(
                    "{}: a deleted transfer job still holds this name (Google keeps it for 30 \
                     days): name the job differently",
                    desired.name
                )));
            }
            Err(e) => return Err(e),
        }
        self.read_back(&desired.name).await
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.0.count("storagetransfer", "UpdateTransferJob");
        let body = Body::new()
            .set_description(&desired.description)
            .set_transfer_spec(spec_of(desired))
            .set_status(status_of(&desired.status));
        let mask = google_cloud_wkt::FieldMask::default().set_paths([
            "description".to_string(),
            "transfer_spec".to_string(),
            "status".to_string(),
        ]);
        let request = UpdateTransferJobRequest::new()
            .set_job_name(&current.id)
            .set_project_id(&self.0.project)
            .set_transfer_job(body)
            .set_update_transfer_job_field_mask(mask);
        let call = self.0.transfer.update_transfer_job().with_request(request);
        call.send().await.api("storagetransfer:UpdateTransferJob")?;
        self.read_back(&current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.count("storagetransfer", "DeleteTransferJob");
        let call = self
            .0
            .transfer
            .delete_transfer_job()
            .set_job_name(&current.id)
            .set_project_id(&self.0.project);
        call.send().await.or_absent("storagetransfer:DeleteTransferJob")?;
        Ok(())
    }
}
