//! The tailnet's DNS: `tailscale_dns_nameservers` and `tailscale_dns_search_paths` (one list
//! each per tailnet, always there: what the spec lists replaces it, a destroy empties it), and
//! `tailscale_dns_split` (the nameservers of one domain, e.g. a VPC's resolver for its private
//! zone: one resource per domain, read together in one call).

use crate::client::TailscaleClient;
use engine::prelude::*;
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Nameservers {
    /// The tailnet's global nameservers, in the order clients try them.
    #[attr(in_place)]
    pub nameservers: Vec<String>,
}

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct SearchPaths {
    #[attr(in_place)]
    pub search_paths: Vec<String>,
}

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct SplitDns {
    #[attr(replace)]
    pub domain: String,
    #[attr(in_place)]
    pub nameservers: Vec<String>,
}

/// A tailnet-wide list (`dns/nameservers` under `dns`, `dns/searchpaths` under
/// `searchPaths`): read, replaced, emptied.
async fn list(
    client: &TailscaleClient,
    operation: &str,
    path: &str,
    field: &str,
) -> KindResult<Vec<String>> {
    let answer = client.call(operation, Method::GET, path, None, None).await?;
    Ok(strings(answer.body.get(field)))
}

async fn set_list(
    client: &TailscaleClient,
    operation: &str,
    path: &str,
    field: &str,
    values: &[String],
) -> KindResult<()> {
    let body = json!({ field: values });
    client.call(operation, Method::POST, path, Some(&body), None).await.map(|_| ())
}

fn strings(value: Option<&Json>) -> Vec<String> {
    value
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

pub(crate) struct NameserversKind(pub TailscaleClient);

impl NameserversKind {
    async fn get(&self) -> Outcome<Self> {
        let nameservers = list(&self.0, "GetNameservers", "dns/nameservers", "dns").await?;
        Ok(Live::new(self.0.tailnet(), Nameservers { nameservers }))
    }
}

impl TypedKind for NameserversKind {
    type Attrs = Nameservers;
    const NAME: &'static str = "tailscale_dns_nameservers";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let live = self.get().await?;
        Ok(requests.iter().map(|_| Some(live.clone())).collect())
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        set_list(&self.0, "SetNameservers", "dns/nameservers", "dns", &desired.nameservers).await?;
        self.get().await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        self.create(ctx, update.desired).await
    }

    async fn delete(&self, _: &Context, _current: &LiveOf<Self>) -> KindResult<()> {
        set_list(&self.0, "SetNameservers", "dns/nameservers", "dns", &[]).await
    }
}

pub(crate) struct SearchPathsKind(pub TailscaleClient);

impl SearchPathsKind {
    async fn get(&self) -> Outcome<Self> {
        let search_paths =
            list(&self.0, "GetSearchPaths", "dns/searchpaths", "searchPaths").await?;
        Ok(Live::new(self.0.tailnet(), SearchPaths { search_paths }))
    }
}

impl TypedKind for SearchPathsKind {
    type Attrs = SearchPaths;
    const NAME: &'static str = "tailscale_dns_search_paths";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let live = self.get().await?;
        Ok(requests.iter().map(|_| Some(live.clone())).collect())
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let paths = &desired.search_paths;
        set_list(&self.0, "SetSearchPaths", "dns/searchpaths", "searchPaths", paths).await?;
        self.get().await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        self.create(ctx, update.desired).await
    }

    async fn delete(&self, _: &Context, _current: &LiveOf<Self>) -> KindResult<()> {
        set_list(&self.0, "SetSearchPaths", "dns/searchpaths", "searchPaths", &[]).await
    }
}

pub(crate) struct SplitDnsKind(pub TailscaleClient);

impl SplitDnsKind {
    /// Sets (or with `None` removes) one domain's nameservers, leaving the others.
    async fn patch(&self, domain: &str, nameservers: Option<&[String]>) -> KindResult<Json> {
        let body = json!({ domain: nameservers });
        let answer = self
            .0
            .call("UpdateSplitDns", Method::PATCH, "dns/split-dns", Some(&body), None)
            .await?;
        Ok(answer.body)
    }

    fn live(&self, domain: &str, all: &Json) -> Option<Live<SplitDns>> {
        let servers = all.get(domain)?;
        let attrs = SplitDns { domain: domain.to_string(), nameservers: strings(Some(servers)) };
        Some(Live::new(domain, attrs))
    }
}

impl TypedKind for SplitDnsKind {
    type Attrs = SplitDns;
    const NAME: &'static str = "tailscale_dns_split";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let all = self.0.call("GetSplitDns", Method::GET, "dns/split-dns", None, None).await?;
        Ok(requests
            .iter()
            .map(|r| {
                let domain = r.id.clone().or_else(|| r.desired.as_ref().map(|d| d.domain.clone()));
                domain.and_then(|d| self.live(&d, &all.body))
            })
            .collect())
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let all = self.patch(&desired.domain, Some(&desired.nameservers)).await?;
        self.live(&desired.domain, &all).ok_or_else(|| {
            KindError::retryable(format!(
                "tailscale:UpdateSplitDns: {} is not there yet",
                desired.domain
            ))
        })
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        self.create(ctx, update.desired).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.patch(&current.attributes.domain, None).await.map(|_| ())
    }
}
