//! `aws_kms_alias`: a name for a key. Aliases have no tags: one is ours when recorded in state
//! or when it already points at the key the spec wants (nothing to take over then). The
//! account's aliases are listed once per run.

use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{ours_by_value, still_there, wanted};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Alias {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub target_key_id: String,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct AliasKind(pub Arc<AwsClients>);

const ALIASES: &str = "kms:aliases";

impl AliasKind {
    /// Every alias of the account in the region that points at a key.
    async fn list(&self) -> KindResult<Vec<Live<Alias>>> {
        let pages = self.0.kms.list_aliases().into_paginator().items().send();
        let aliases: Vec<_> = pages.all("kms:ListAliases").await?;
        let mut out = Vec::new();
        for a in aliases.iter().filter(|a| a.target_key_id().is_some()) {
            let name = required(a.alias_name(), "kms:ListAliases: AliasName")?;
            let alias = Alias {
                name: name.to_string(),
                target_key_id: a.target_key_id().unwrap_or_default().to_string(),
                arn: a.alias_arn().map(str::to_string),
            };
            out.push(Live::new(name, alias));
        }
        Ok(out)
    }

    async fn find(&self, name: &str) -> KindResult<Option<Live<Alias>>> {
        Ok(self.list().await?.into_iter().find(|l| l.id == name))
    }
}

impl TypedKind for AliasKind {
    type Attrs = Alias;
    const NAME: &'static str = "aws_kms_alias";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let all = ctx.memo(ALIASES, || self.list()).await?;
        let found = |r: &ReadRequest<Alias>| {
            let name = wanted(r, |d| d.name.clone())?;
            let found = all.iter().find(|l| l.id == name).cloned();
            ours_by_value(r, found, |d, l| d.target_key_id == l.target_key_id)
        };
        Ok(requests.iter().map(found).collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        let call = self.0.kms.create_alias().alias_name(name);
        let call = call.target_key_id(&desired.target_key_id);
        match call.send().await.api("kms:CreateAlias") {
            Err(e) if e.has_code("AlreadyExistsException") => {
                return Err(KindError::new(format!(
                    "kms:CreateAlias: {name} exists and points at a key this spec does not own"
                )));
            }
            result => result?,
        };
        ctx.forget(ALIASES);
        read_back(&format!("alias {name}"), || self.find(name)).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let call = self.0.kms.update_alias().alias_name(&current.id);
        let call = call.target_key_id(&desired.target_key_id);
        call.send().await.api("kms:UpdateAlias")?;
        ctx.forget(ALIASES);
        still_there(&format!("alias {}", current.id), self.find(&current.id).await?)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.kms.delete_alias().alias_name(&current.id);
        let result = call.send().await.or_gone("kms:DeleteAlias", &["NotFoundException"]);
        ctx.forget(ALIASES);
        result
    }
}
