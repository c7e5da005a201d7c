//! `gcp_storage_bucket`: a Cloud Storage bucket (OpenBao's raft snapshots): uniform
//! bucket-level access, public access prevented, object versioning, and a lifecycle that
//! deletes objects after some days and replaced versions after fewer.
//!
//! Bucket calls go through the JSON API ([`super::JsonApi`]): Google's Rust client manages
//! buckets over gRPC only.

use crate::GcpClients;
use crate::labels::{from_labels, to_labels};
use engine::ownership::adoptable;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Bucket {
    #[attr(replace)]
    pub name: String,
    /// The region, as Cloud Storage writes it (`EUROPE-WEST4`).
    #[attr(replace)]
    pub location: String,
    #[attr(in_place)]
    pub uniform_access: bool,
    /// `enforced` or `inherited`.
    #[attr(in_place)]
    pub public_access_prevention: String,
    #[attr(in_place)]
    pub versioning: bool,
    /// The lifecycle rules as the JSON API writes them (`[{action, condition}]`).
    #[attr(in_place, normalize = engine::normalize::json_document)]
    pub lifecycle: Json,
    #[attr(in_place, tags)]
    pub labels: Tags,
}

pub(crate) struct BucketKind(pub Arc<GcpClients>);

/// What an answer of the JSON API that is not a success means to the engine.
pub(super) async fn failure(op: &str, answer: reqwest::Response) -> KindError {
    let status = answer.status().as_u16();
    let body: Json = answer.json().await.unwrap_or(Json::Null);
    let message = body["error"]["message"].as_str().unwrap_or("no message").to_string();
    let text = format!("{op}: {status} {message}");
    let mut error = if status == 429 || status >= 500 {
        KindError::retryable(text)
    } else {
        KindError::new(text)
    };
    error.already_exists = status == 409 && op.ends_with("Insert");
    error.with_code(status.to_string())
}

impl BucketKind {
    fn attrs(b: &Json, address: Option<&engine::Address>) -> Bucket {
        let labels: std::collections::HashMap<String, String> =
            serde_json::from_value(b["labels"].clone()).unwrap_or_default();
        Bucket {
            name: b["name"].as_str().unwrap_or_default().to_string(),
            location: b["location"].as_str().unwrap_or_default().to_uppercase(),
            uniform_access: b["iamConfiguration"]["uniformBucketLevelAccess"]["enabled"]
                .as_bool()
                .unwrap_or(false),
            public_access_prevention: b["iamConfiguration"]["publicAccessPrevention"]
                .as_str()
                .unwrap_or("inherited")
                .to_string(),
            versioning: b["versioning"]["enabled"].as_bool().unwrap_or(false),
            lifecycle: b["lifecycle"]["rule"].clone().as_array().map_or(json!([]), |r| json!(r)),
            labels: from_labels(&labels, address),
        }
    }

    fn body(desired: &Bucket) -> Json {
        json!({
            "name": desired.name,
            "location": desired.location,
            "iamConfiguration": {
                "uniformBucketLevelAccess": {"enabled": desired.uniform_access},
                "publicAccessPrevention": desired.public_access_prevention,
            },
            "versioning": {"enabled": desired.versioning},
            "lifecycle": {"rule": desired.lifecycle},
            "labels": to_labels(&desired.labels),
        })
    }

    /// The bucket `name`, or `None` when there is none.
    async fn get(&self, name: &str) -> KindResult<Option<Json>> {
        let op = "storage:BucketsGet";
        self.0.count("storage", "BucketsGet");
        let api = &self.0.storage;
        let url = api.url(&["b", name]).map_err(KindError::new)?;
        let answer =
            api.send(reqwest::Method::GET, url, None).await.map_err(KindError::retryable)?;
        match answer.status().as_u16() {
            404 => Ok(None),
            s if (200..300).contains(&s) => Ok(Some(
                answer
                    .json()
                    .await
                    .map_err(|e| KindError::retryable(format!("{op}: reading the answer: {e}")))?,
            )),
            _ => Err(failure(op, answer).await),
        }
    }

    async fn send(
        &self,
        op: &str,
        method: reqwest::Method,
        url: reqwest::Url,
        body: Option<&Json>,
    ) -> KindResult<()> {
        self.0.count("storage", op.trim_start_matches("storage:"));
        let answer = self.0.storage.send(method, url, body).await.map_err(|e| {
            // The request may have reached the bucket: look before trying again.
            KindError::outcome_unknown(format!("{op}: {e}"))
        })?;
        if answer.status().is_success() { Ok(()) } else { Err(failure(op, answer).await) }
    }

    async fn read_back(&self, ctx: &Context, name: &str) -> Outcome<Self> {
        let found = self.get(name).await?.ok_or_else(|| {
            KindError::retryable(format!("storage:BucketsGet: {name} is not there yet"))
        })?;
        Ok(Live::new(name, Self::attrs(&found, ctx.address())))
    }
}

impl TypedKind for BucketKind {
    type Attrs = Bucket;
    const NAME: &'static str = "gcp_storage_bucket";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests.iter() {
            let name = match (&r.id, &r.desired) {
                (Some(id), _) => id.clone(),
                (None, Some(d)) => d.name.clone(),
                (None, None) => {
                    out.push(None);
                    continue;
                }
            };
            let found = self.get(&name).await?.map(|b| Self::attrs(&b, Some(&r.address)));
            out.push(match found {
                Some(found) if r.id.is_some() || adoptable(r, &found) => {
                    Some(Live::new(name, found))
                }
                _ => None,
            });
        }
        Ok(out)
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let api = &self.0.storage;
        let mut url = api.url(&["b"]).map_err(KindError::new)?;
        url.query_pairs_mut().append_pair("project", &self.0.project);
        self.send("storage:BucketsInsert", reqwest::Method::POST, url, Some(&Self::body(desired)))
            .await?;
        self.read_back(ctx, &desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        // A whole update, not a patch: a patch merges labels, so one added out of band would
        // stay.
        let url = self.0.storage.url(&["b", &current.id]).map_err(KindError::new)?;
        self.send("storage:BucketsUpdate", reqwest::Method::PUT, url, Some(&Self::body(desired)))
            .await?;
        self.read_back(ctx, &current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let url = self.0.storage.url(&["b", &current.id]).map_err(KindError::new)?;
        match self.send("storage:BucketsDelete", reqwest::Method::DELETE, url, None).await {
            Err(e) if e.code.as_deref() == Some("404") => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_reads_back_as_written() {
        let desired = Bucket {
            name: "p-gcp-0-openbao-snapshot".into(),
            location: "EUROPE-WEST4".into(),
            uniform_access: true,
            public_access_prevention: "enforced".into(),
            versioning: true,
            lifecycle: json!([{"action": {"type": "Delete"}, "condition": {"age": 120}}]),
            labels: Tags::from([("engine:spec".to_string(), "gcp".to_string())]),
        };
        let mut answer = BucketKind::body(&desired);
        // Cloud Storage answers with more than it was sent, and the location as sent.
        answer["id"] = json!("p-gcp-0-openbao-snapshot");
        answer["storageClass"] = json!("STANDARD");
        assert_eq!(BucketKind::attrs(&answer, None), desired);
    }
}
