//! `gcp_compute_region_instance_group_manager`: a regional managed instance group and the
//! instance template its instances are made from (OpenBao's servers).
//!
//! GCP instance templates cannot change, and one cannot be deleted while a group uses it. So
//! the group owns its template: the template is an attribute of the group, written as a
//! template named `<group>-<8 hex digits of its content>`. A changed template is made first,
//! the group rolls to it (PROACTIVE, REPLACE), then the old one is deleted; the group's delete
//! takes its templates with it. One resource, so no plan can order a template's replacement
//! wrongly around the group that uses it.

use super::{from_json, last_segment, read_each, strings, to_json};
use crate::GcpClients;
use crate::error::GcpResult;
use crate::operation::finish;
use engine::prelude::*;
use google_cloud_compute_v1::model::{InstanceGroupManager as Body, InstanceTemplate, Operation};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct InstanceGroup {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub base_instance_name: String,
    #[attr(in_place)]
    pub target_size: i64,
    /// The instances' template as [`template_body`] reads it: `machine_type`, `image`,
    /// `boot_disk_gb`, `data_disk` (`name`, `size_gb`, `type`; optional), `service_account`,
    /// `network`, `subnetwork`, `tags`, `metadata`, `labels`, and optionally `can_ip_forward`
    /// and `shielded_vm` (secure boot, vTPM, integrity monitoring).
    #[attr(in_place, normalize = engine::normalize::json_document)]
    pub template: Json,
    /// The group's instance group URL (what a backend service names).
    #[attr(computed)]
    pub instance_group: Option<String>,
    /// The template the group uses now.
    #[attr(computed)]
    pub template_name: Option<String>,
}

pub(crate) struct InstanceGroupKind(pub Arc<GcpClients>);

/// The name of the template of `group` holding `template`.
fn template_name(group: &str, template: &Json) -> String {
    let digest = Sha256::digest(template.to_string().as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{group}-{hex}")
}

/// Whether `name` is one of `group`'s templates.
fn is_template_of(group: &str, name: &str) -> bool {
    name.strip_prefix(group)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|h| h.len() == 8 && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// An integer of Compute's JSON (int64 travel as decimal strings).
fn int(v: &Json) -> i64 {
    v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)
}

/// The template body (Compute's JSON) of `template` named `name`.
fn template_body(name: &str, t: &Json) -> Json {
    let metadata: Vec<Json> = t["metadata"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| json!({"key": k, "value": v})).collect())
        .unwrap_or_default();
    let mut disks = vec![json!({
        "boot": true,
        "autoDelete": true,
        "type": "PERSISTENT",
        "initializeParams": {
            "sourceImage": t["image"],
            "diskSizeGb": t["boot_disk_gb"].to_string(),
        },
    })];
    if t["data_disk"].is_object() {
        disks.push(json!({
            "boot": false,
            "autoDelete": true,
            "type": "PERSISTENT",
            "deviceName": t["data_disk"]["name"],
            "initializeParams": {
                "diskSizeGb": t["data_disk"]["size_gb"].to_string(),
                "diskType": t["data_disk"]["type"],
            },
        }));
    }
    let mut properties = json!({
        "machineType": t["machine_type"],
        "disks": disks,
        "serviceAccounts": [{
            "email": t["service_account"],
            "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
        }],
        "networkInterfaces": [{"network": t["network"], "subnetwork": t["subnetwork"]}],
        "tags": {"items": t["tags"]},
        "metadata": {"items": metadata},
        "labels": t["labels"],
    });
    if t["can_ip_forward"] == json!(true) {
        properties["canIpForward"] = json!(true);
    }
    if t["shielded_vm"] == json!(true) {
        properties["shieldedInstanceConfig"] = json!({
            "enableSecureBoot": true,
            "enableVtpm": true,
            "enableIntegrityMonitoring": true,
        });
    }
    json!({ "name": name, "properties": properties })
}

/// The template as this kind writes it, read back from Compute's JSON. What a template may
/// leave out (`data_disk`, `can_ip_forward`, `shielded_vm`) is read back only when there.
fn template_of(body: &Json) -> Json {
    let p = &body["properties"];
    let disks = p["disks"].as_array().cloned().unwrap_or_default();
    let boot = disks.iter().find(|d| d["boot"] == json!(true)).cloned().unwrap_or(Json::Null);
    let data = disks.iter().find(|d| d["boot"] != json!(true));
    let metadata: serde_json::Map<String, Json> = p["metadata"]["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| Some((i["key"].as_str()?.to_string(), i["value"].clone())))
                .collect()
        })
        .unwrap_or_default();
    let mut template = json!({
        "machine_type": last_segment(p["machineType"].as_str().unwrap_or_default()),
        "image": boot["initializeParams"]["sourceImage"],
        "boot_disk_gb": int(&boot["initializeParams"]["diskSizeGb"]),
        "service_account": p["serviceAccounts"][0]["email"],
        "network": p["networkInterfaces"][0]["network"],
        "subnetwork": p["networkInterfaces"][0]["subnetwork"],
        "tags": strings(&p["tags"]["items"]),
        "metadata": metadata,
        "labels": p["labels"].as_object().cloned().unwrap_or_default(),
    });
    if let Some(data) = data {
        template["data_disk"] = json!({
            "name": data["deviceName"],
            "size_gb": int(&data["initializeParams"]["diskSizeGb"]),
            "type": last_segment(data["initializeParams"]["diskType"].as_str().unwrap_or_default()),
        });
    }
    if p["canIpForward"] == json!(true) {
        template["can_ip_forward"] = json!(true);
    }
    let shielded = &p["shieldedInstanceConfig"];
    if shielded["enableSecureBoot"] == json!(true) && shielded["enableVtpm"] == json!(true) {
        template["shielded_vm"] = json!(true);
    }
    template
}

impl InstanceGroupKind {
    async fn finish_global(&self, ctx: &Context, what: &str, op: Operation) -> KindResult<()> {
        finish(ctx, what, op, |name| async move {
            self.0.count("compute", "GetGlobalOperation");
            let call = self.0.instance_templates.get_operation().set_project(&self.0.project);
            call.set_operation(name).send().await.api("compute:GetGlobalOperation")
        })
        .await
    }

    /// Makes the template `name` unless it exists (a run that died after making it).
    async fn make_template(&self, ctx: &Context, name: &str, template: &Json) -> KindResult<()> {
        let what = "compute:InsertInstanceTemplate";
        let body: InstanceTemplate = from_json(what, template_body(name, template))?;
        self.0.count("compute", "InsertInstanceTemplate");
        let call = self.0.instance_templates.insert().set_project(&self.0.project);
        match call.set_body(body).send().await.api(what) {
            Ok(op) => match self.finish_global(ctx, what, op).await {
                Err(e) if e.already_exists => Ok(()),
                other => other,
            },
            Err(e) if e.already_exists => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Deletes the group's templates other than `keep`; one still in use (instances being
    /// replaced) stays for the next run.
    async fn delete_templates(
        &self,
        ctx: &Context,
        group: &str,
        keep: Option<&str>,
    ) -> KindResult<()> {
        self.0.count("compute", "ListInstanceTemplates");
        let mut items = self.0.instance_templates.list().set_project(&self.0.project).by_item();
        let all = collect_by_name!(items, "compute:ListInstanceTemplates");
        for name in all.keys().filter(|n| is_template_of(group, n) && Some(n.as_str()) != keep) {
            let what = "compute:DeleteInstanceTemplate";
            self.0.count("compute", "DeleteInstanceTemplate");
            let call = self.0.instance_templates.delete().set_project(&self.0.project);
            let deleted = match call.set_instance_template(name).send().await.or_absent(what)? {
                Some(op) => self.finish_global(ctx, what, op).await,
                None => Ok(()),
            };
            if let Err(e) = deleted {
                tracing::warn!(template = %name, error = %e.message, "kept: still in use");
            }
        }
        Ok(())
    }

    async fn get(&self, name: &str) -> KindResult<Option<Live<InstanceGroup>>> {
        self.0.count("compute", "GetRegionInstanceGroupManager");
        let call = self.0.region_instance_group_managers.get().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_instance_group_manager(name);
        let Some(group) = call.send().await.or_absent("compute:GetRegionInstanceGroupManager")?
        else {
            return Ok(None);
        };
        let g = to_json(&group);
        let template_name = last_segment(g["instanceTemplate"].as_str().unwrap_or_default());
        self.0.count("compute", "GetInstanceTemplate");
        let call = self.0.instance_templates.get().set_project(&self.0.project);
        let found = call.set_instance_template(template_name).send().await;
        let template =
            found.or_absent("compute:GetInstanceTemplate")?.map(|t| template_of(&to_json(&t)));
        let attrs = InstanceGroup {
            name: name.to_string(),
            base_instance_name: g["baseInstanceName"].as_str().unwrap_or_default().into(),
            target_size: int(&g["targetSize"]),
            template: template.unwrap_or(Json::Null),
            instance_group: g["instanceGroup"].as_str().map(str::to_string),
            template_name: Some(template_name.to_string()),
        };
        Ok(Some(Live::new(name, attrs)))
    }

    async fn read_back(&self, name: &str) -> Outcome<Self> {
        self.get(name).await?.ok_or_else(|| {
            KindError::retryable(format!(
                "compute:GetRegionInstanceGroupManager: {name} is not there yet"
            ))
        })
    }

    fn template_url(&self, name: &str) -> String {
        format!(
            "https://www.googleapis.com/compute/v1/projects/{}/global/instanceTemplates/{name}",
            self.0.project
        )
    }
}

impl TypedKind for InstanceGroupKind {
    type Attrs = InstanceGroup;
    const NAME: &'static str = "gcp_compute_region_instance_group_manager";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(requests, |d| d.name.clone(), |name| async move { self.get(&name).await }).await
    }

    async fn create(&self, ctx: &Context, d: &Self::Attrs) -> Outcome<Self> {
        let template = template_name(&d.name, &d.template);
        self.make_template(ctx, &template, &d.template).await?;
        let what = "compute:InsertRegionInstanceGroupManager";
        let body: Body = from_json(
            what,
            json!({
                "name": d.name,
                "baseInstanceName": d.base_instance_name,
                "instanceTemplate": self.template_url(&template),
                "targetSize": d.target_size,
                "updatePolicy": {"type": "PROACTIVE", "minimalAction": "REPLACE"},
            }),
        )?;
        self.0.count("compute", "InsertRegionInstanceGroupManager");
        let call = self.0.region_instance_group_managers.insert().set_project(&self.0.project);
        let op = call.set_region(&self.0.region).set_body(body).send().await.api(what)?;
        finish_regional!(self.0, region_instance_group_managers, ctx, what, op)?;
        self.read_back(&d.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let template = template_name(&desired.name, &desired.template);
        self.make_template(ctx, &template, &desired.template).await?;
        let what = "compute:PatchRegionInstanceGroupManager";
        // The patch names the fingerprint read: a group changed meanwhile refuses it (412).
        self.0.count("compute", "GetRegionInstanceGroupManager");
        let call = self.0.region_instance_group_managers.get().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_instance_group_manager(&current.id);
        let now = to_json(&call.send().await.api("compute:GetRegionInstanceGroupManager")?);
        let body: Body = from_json(
            what,
            json!({
                "fingerprint": now["fingerprint"],
                "instanceTemplate": self.template_url(&template),
                "targetSize": desired.target_size,
                "updatePolicy": {"type": "PROACTIVE", "minimalAction": "REPLACE"},
            }),
        )?;
        self.0.count("compute", "PatchRegionInstanceGroupManager");
        let call = self.0.region_instance_group_managers.patch().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_instance_group_manager(&current.id);
        let op = call.set_body(body).send().await.api(what)?;
        finish_regional!(self.0, region_instance_group_managers, ctx, what, op)?;
        self.delete_templates(ctx, &desired.name, Some(&template)).await?;
        self.read_back(&current.id).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let what = "compute:DeleteRegionInstanceGroupManager";
        self.0.count("compute", "DeleteRegionInstanceGroupManager");
        let call = self.0.region_instance_group_managers.delete().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_instance_group_manager(&current.id);
        if let Some(op) = call.send().await.or_absent(what)? {
            finish_regional!(self.0, region_instance_group_managers, ctx, what, op)?;
        }
        self.delete_templates(ctx, &current.id, None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Json {
        json!({
            "machine_type": "e2-small",
            "image": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
            "boot_disk_gb": 20,
            "data_disk": {"name": "openbao-data", "size_gb": 10, "type": "pd-balanced"},
            "service_account": "openbao-node@p.iam.gserviceaccount.com",
            "network": "https://www.googleapis.com/compute/v1/projects/p/global/networks/n",
            "subnetwork": "https://www.googleapis.com/compute/v1/projects/p/regions/r/subnetworks/s",
            "tags": ["openbao"],
            "metadata": {"startup-script": "#!/bin/bash\necho hi\n"},
            "labels": {"engine-managed-by": "engine"},
        })
    }

    #[test]
    fn a_template_reads_back_as_written_and_names_its_content() {
        let t = template();
        let written = template_body("g-00000000", &t);
        // What Compute answers: the same, with int64 as text and more fields.
        let mut answer = written.clone();
        answer["selfLink"] = json!("https://www.googleapis.com/compute/v1/.../g-00000000");
        assert_eq!(template_of(&answer), t);
        let name = template_name("openbao-dev", &t);
        assert!(is_template_of("openbao-dev", &name), "{name}");
        assert!(!is_template_of("openbao", &name));
        let mut other = t.clone();
        other["machine_type"] = json!("e2-medium");
        assert_ne!(template_name("openbao-dev", &other), name, "a new content, a new name");
    }
}
