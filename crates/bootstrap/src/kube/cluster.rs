//! One connected cluster: the kube client, a discovery cache, and the calls the kinds make, each
//! counted (`kube:<Operation>`) so a no-op apply can be shown to send no write.

use super::object_id::ObjectId;
use engine::{ApiCall, ApiCallCounter, KindError};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::Value as Json;
use std::collections::HashMap;
use tokio::sync::RwLock;

/// The field manager of every server-side apply the engine sends.
pub const FIELD_MANAGER: &str = "engine";

/// The label every object the engine owns carries (Kubernetes' recommended label for the tool
/// that manages an object). Server-side apply records a manager only for the fields it sets, so
/// an object of nothing but a name (a bare Namespace) would otherwise carry no trace of the
/// engine, and a run killed between its apply and the state write could not take it back.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// `manifest` with [`MANAGED_BY_LABEL`] set to the field manager, unless it sets that label.
pub fn with_managed_by_label(mut manifest: Json) -> Json {
    if let Some(metadata) = manifest.get_mut("metadata").and_then(Json::as_object_mut) {
        let labels = metadata.entry("labels").or_insert_with(|| Json::Object(Default::default()));
        if let Some(labels) = labels.as_object_mut() {
            labels.entry(MANAGED_BY_LABEL).or_insert_with(|| Json::String(FIELD_MANAGER.into()));
        }
    }
    manifest
}

/// Whether the engine's field manager has applied `obj` (an object as read): the marker without
/// which an object that state does not record is never taken over.
pub fn applied_by_engine(obj: &Json) -> bool {
    let managers = obj.pointer("/metadata/managedFields").and_then(Json::as_array);
    managers.is_some_and(|m| {
        m.iter().any(|e| e.get("manager").and_then(Json::as_str) == Some(FIELD_MANAGER))
    })
}

/// The error for an object (`existing`, as read) that exists but that the engine did not make;
/// it names the managers that did.
pub fn not_ours(id: &impl std::fmt::Display, existing: &Json) -> KindError {
    let managers = existing.pointer("/metadata/managedFields").and_then(Json::as_array);
    let mut names: Vec<&str> = managers
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("manager").and_then(Json::as_str))
        .collect();
    names.sort_unstable();
    names.dedup();
    let by = if names.is_empty() {
        "no field manager".to_string()
    } else {
        format!("managed by `{}`", names.join("`, `"))
    };
    KindError::new(format!(
        "{id} already exists and was not made by the engine ({by}, none `{FIELD_MANAGER}`): \
         remove it, or declare it in the spec as a patch of an object the engine does not own"
    ))
}

/// A resource type as discovery describes it.
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub api: ApiResource,
    pub namespaced: bool,
}

/// A cluster the kinds talk to.
pub struct Cluster {
    pub name: String,
    client: kube::Client,
    calls: ApiCallCounter,
    /// `(apiVersion, kind)` -> type; `None` until first needed.
    types: RwLock<Option<HashMap<(String, String), ResourceType>>>,
    /// How the API server is reached when it is private, said when it cannot be reached.
    route: Option<String>,
}

impl Cluster {
    pub fn new(name: &str, client: kube::Client, calls: ApiCallCounter) -> Cluster {
        Cluster { name: name.to_string(), client, calls, types: RwLock::new(None), route: None }
    }

    /// The cluster, its private API server reached by `route`.
    pub fn with_route(mut self, route: Option<String>) -> Cluster {
        self.route = route;
        self
    }

    fn count(&self, operation: &str) {
        self.calls.record(&ApiCall { service: "kube".into(), operation: operation.into() });
    }

    /// The type serving `api_version`/`kind`; an error when the cluster does not serve it.
    pub async fn resource_type(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<ResourceType, KindError> {
        self.served(api_version, kind).await?.ok_or_else(|| {
            KindError::new(format!(
                "cluster `{}` serves no kind `{kind}` in `{api_version}`",
                self.name
            ))
        })
    }

    /// The type serving `api_version`/`kind`, `None` when discovery answers that the cluster
    /// does not serve it (its CRD is absent). A discovery that fails is an error, never "not
    /// served": objects must not look deleted because the API server did not answer. Discovery
    /// is read once and read again when a type is missing (a CRD applied since).
    async fn served(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<ResourceType>, KindError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(types) = self.types.read().await.as_ref()
            && let Some(t) = types.get(&key)
        {
            return Ok(Some(t.clone()));
        }
        let types = self.discover().await?;
        let found = types.get(&key).cloned();
        *self.types.write().await = Some(types);
        Ok(found)
    }

    /// Forgets discovery (after CRDs change).
    pub async fn forget_types(&self) {
        *self.types.write().await = None;
    }

    async fn discover(&self) -> Result<HashMap<(String, String), ResourceType>, KindError> {
        self.count("GetDiscovery");
        let core = self
            .client
            .list_core_api_versions_aggregated()
            .await
            .map_err(|e| self.error("discovery", e))?;
        self.count("GetDiscovery");
        let groups = self
            .client
            .list_api_groups_aggregated()
            .await
            .map_err(|e| self.error("discovery", e))?;
        let mut types = HashMap::new();
        for group in core.items.iter().chain(groups.items.iter()) {
            let group_name =
                group.metadata.as_ref().and_then(|m| m.name.clone()).unwrap_or_default();
            for version in &group.versions {
                let Some(v) = &version.version else { continue };
                let api_version =
                    if group_name.is_empty() { v.clone() } else { format!("{group_name}/{v}") };
                for r in &version.resources {
                    let (Some(plural), Some(kind)) =
                        (&r.resource, r.response_kind.as_ref().and_then(|k| k.kind.clone()))
                    else {
                        continue;
                    };
                    let api = ApiResource {
                        group: group_name.clone(),
                        version: v.clone(),
                        api_version: api_version.clone(),
                        kind: kind.clone(),
                        plural: plural.clone(),
                    };
                    let namespaced = r.scope.as_deref() == Some("Namespaced");
                    types.insert((api_version.clone(), kind), ResourceType { api, namespaced });
                }
            }
        }
        Ok(types)
    }

    /// Every `group/version` the cluster serves (for Helm's `.Capabilities.APIVersions`).
    pub async fn api_versions(&self) -> Result<Vec<String>, KindError> {
        if self.types.read().await.is_none() {
            let types = self.discover().await?;
            *self.types.write().await = Some(types);
        }
        let types = self.types.read().await;
        let mut out: Vec<String> = types
            .as_ref()
            .map(|t| t.keys().flat_map(|(v, k)| [v.clone(), format!("{v}/{k}")]).collect())
            .unwrap_or_default();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// The server's version (`v1.36.5`).
    pub async fn server_version(&self) -> Result<String, KindError> {
        self.count("GetVersion");
        let info = self.client.apiserver_version().await.map_err(|e| self.error("version", e))?;
        Ok(info.git_version)
    }

    async fn api(&self, id: &ObjectId) -> Result<(Api<DynamicObject>, ResourceType), KindError> {
        let t = self.resource_type(&id.api_version, &id.kind).await?;
        Ok((self.api_of(id, &t)?, t))
    }

    /// The API of the object `id` of type `t`.
    fn api_of(&self, id: &ObjectId, t: &ResourceType) -> Result<Api<DynamicObject>, KindError> {
        if !t.namespaced {
            return Ok(Api::all_with(self.client.clone(), &t.api));
        }
        if id.namespace.is_empty() {
            return Err(KindError::new(format!("{id}: a namespaced object needs a namespace")));
        }
        Ok(Api::namespaced_with(self.client.clone(), &id.namespace, &t.api))
    }

    /// The object, or `None` when it does not exist (a kind the cluster does not serve, its
    /// CRD gone, has no objects).
    pub async fn get(&self, id: &ObjectId) -> Result<Option<Json>, KindError> {
        let Some(t) = self.served(&id.api_version, &id.kind).await? else {
            return Ok(None);
        };
        let api = self.api_of(id, &t)?;
        self.count("GetObject");
        let found = api.get_opt(&id.name).await.map_err(|e| self.error(&id.to_string(), e))?;
        found.map(|o| to_json(&o)).transpose()
    }

    /// Every object of a type (in one namespace, or in all), by name.
    pub async fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
    ) -> Result<Vec<Json>, KindError> {
        let Some(t) = self.served(api_version, kind).await? else {
            return Ok(vec![]);
        };
        let api: Api<DynamicObject> = if t.namespaced && !namespace.is_empty() {
            Api::namespaced_with(self.client.clone(), namespace, &t.api)
        } else {
            Api::all_with(self.client.clone(), &t.api)
        };
        self.count("ListObjects");
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| self.error(&format!("{kind} list"), e))?;
        // List items come without their type; give it back so they compare like single reads.
        list.items
            .iter()
            .map(|o| {
                let mut j = to_json(o)?;
                j["apiVersion"] = Json::String(t.api.api_version.clone());
                j["kind"] = Json::String(t.api.kind.clone());
                Ok(j)
            })
            .collect()
    }

    /// Server-side applies `manifest` under the engine's field manager; `force` takes over fields
    /// another manager owns. Returns the object as stored.
    pub async fn apply(&self, manifest: &Json, force: bool) -> Result<Json, KindError> {
        let id = ObjectId::of(manifest)
            .ok_or_else(|| KindError::new("an object needs apiVersion, kind and metadata.name"))?;
        let (api, _) = self.api(&id).await?;
        let mut params = PatchParams::apply(FIELD_MANAGER);
        if force {
            params = params.force();
        }
        self.count("ApplyObject");
        let stored = api
            .patch(&id.name, &params, &Patch::Apply(manifest))
            .await
            .map_err(|e| self.error(&id.to_string(), e))?;
        to_json(&stored)
    }

    /// Merge-patches `patch` into an existing object (annotations, `spec.suspend`).
    pub async fn merge_patch(&self, id: &ObjectId, patch: &Json) -> Result<(), KindError> {
        let (api, _) = self.api(id).await?;
        self.count("PatchObject");
        api.patch(&id.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| self.error(&id.to_string(), e))?;
        Ok(())
    }

    /// Deletes the object; `false` when it was already gone.
    pub async fn delete(&self, id: &ObjectId) -> Result<bool, KindError> {
        let Some(t) = self.served(&id.api_version, &id.kind).await? else {
            return Ok(false);
        };
        let api = self.api_of(id, &t)?;
        self.count("DeleteObject");
        match api.delete(&id.name, &DeleteParams::background()).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(e) => Err(self.error(&id.to_string(), e)),
        }
    }

    /// A kind error naming what was being done; retryable when the server may accept it later.
    fn error(&self, what: &str, e: kube::Error) -> KindError {
        match e {
            kube::Error::Api(status) => {
                let retryable = matches!(status.code, 409 | 429 | 500 | 503 | 504)
                    && status.reason != "AlreadyExists";
                let message = format!(
                    "cluster `{}`: {what}: {} ({})",
                    self.name, status.message, status.reason
                );
                let error =
                    if retryable { KindError::retryable(message) } else { KindError::new(message) };
                error.with_code(status.reason.clone()).with_source(kube::Error::Api(status))
            }
            other => {
                let route = self.route.as_deref().map(|r| format!("; {r}")).unwrap_or_default();
                KindError::retryable(format!("cluster `{}`: {what}: {other}{route}", self.name))
                    .with_source(other)
            }
        }
    }
}

fn to_json(o: &DynamicObject) -> Result<Json, KindError> {
    serde_json::to_value(o).map_err(|e| KindError::new(format!("object from the API server: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_private_api_server_says_how_it_is_reached() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let route = "it answers only inside the VPC, reached through the subnet router `r`";
        let cluster =
            Cluster::new("aws-0", client, ApiCallCounter::default()).with_route(Some(route.into()));
        let id = ObjectId::parse_key("v1|ConfigMap|default|x").unwrap();
        let err = cluster.get(&id).await.unwrap_err();
        assert!(err.retryable, "{err:?}");
        assert!(err.message.starts_with("cluster `aws-0`: discovery: "), "{}", err.message);
        assert!(err.message.ends_with(route), "{}", err.message);
    }

    #[test]
    fn owned_objects_carry_the_label_unless_their_manifest_sets_it() {
        let bare = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "flux-system"}});
        let labelled = with_managed_by_label(bare);
        assert_eq!(labelled["metadata"]["labels"][MANAGED_BY_LABEL], "engine");
        assert_eq!(labelled["metadata"]["name"], "flux-system");
        let theirs = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {MANAGED_BY_LABEL: "Helm", "team": "a"}}});
        assert_eq!(with_managed_by_label(theirs.clone()), theirs, "the manifest's own value");
    }

    #[test]
    fn an_object_not_made_by_the_engine_is_named_with_its_managers() {
        let id = ObjectId::parse_key("v1|Namespace||flux-system").unwrap();
        let kubectl = serde_json::json!({"metadata": {"managedFields": [
            {"manager": "kubectl-create", "operation": "Update"},
            {"manager": "kubectl-label", "operation": "Update"}]}});
        let err = not_ours(&id, &kubectl).message;
        assert!(err.starts_with("Namespace flux-system already exists"), "{err}");
        assert!(
            err.contains("managed by `kubectl-create`, `kubectl-label`, none `engine`"),
            "{err}"
        );
        let bare = not_ours(&id, &serde_json::json!({"metadata": {}})).message;
        assert!(bare.contains("(no field manager, none `engine`)"), "{bare}");
    }
}
