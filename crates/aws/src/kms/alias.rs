//! `aws_kms_alias`: a name for a key. Aliases have no tags: one is ours when recorded in state
//! or when it already points at the key the spec wants (nothing to take over then).

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, ours_by_value, still_there, str_attr, wanted_name};
use crate::settle::read_back;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct KmsAlias(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("target_key_id"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl KmsAlias {
    /// Every alias of the account in the region, as (name, target key id, arn).
    async fn list(&self) -> Result<Vec<Live>, KindError> {
        let kms = &self.0.kms;
        let aliases: Vec<_> = kms
            .list_aliases()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("kms:ListAliases", e))?;
        Ok(aliases
            .into_iter()
            .filter(|a| a.target_key_id().is_some())
            .map(|a| {
                live(
                    a.alias_name().unwrap_or_default(),
                    [
                        ("name", json!(a.alias_name().unwrap_or_default())),
                        ("target_key_id", json!(a.target_key_id().unwrap_or_default())),
                        ("arn", json!(a.alias_arn().unwrap_or_default())),
                    ],
                )
            })
            .collect())
    }

    async fn find(&self, name: &str) -> Result<Option<Live>, KindError> {
        Ok(self.list().await?.into_iter().find(|l| l.id == name))
    }
}

#[async_trait]
impl Kind for KmsAlias {
    fn name(&self) -> &'static str {
        "aws_kms_alias"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let all = ctx.memo("kms:aliases", || self.list()).await?;
        Ok(requests
            .iter()
            .map(|r| {
                let name = wanted_name(r, "name")?;
                let found = all.iter().find(|l| l.id == name).cloned();
                ours_by_value(r, found, "target_key_id")
            })
            .collect())
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let kms = &self.0.kms;
        let name = str_attr(desired, "name")?;
        kms.create_alias()
            .alias_name(name)
            .target_key_id(str_attr(desired, "target_key_id")?)
            .send()
            .await
            .map_err(|e| {
                if has_code(&e, "AlreadyExistsException") {
                    KindError::new(format!(
                        "kms:CreateAlias: {name} exists and points at a key this spec does not own"
                    ))
                } else {
                    api_error("kms:CreateAlias", e)
                }
            })?;
        ctx.forget("kms:aliases");
        read_back(&format!("alias {name}"), || self.find(name)).await
    }

    async fn update(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let kms = &self.0.kms;
        kms.update_alias()
            .alias_name(&current.id)
            .target_key_id(str_attr(desired, "target_key_id")?)
            .send()
            .await
            .map_err(|e| api_error("kms:UpdateAlias", e))?;
        ctx.forget("kms:aliases");
        still_there(&format!("alias {}", current.id), self.find(&current.id).await?)
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let kms = &self.0.kms;
        let result = kms.delete_alias().alias_name(&current.id).send().await;
        ctx.forget("kms:aliases");
        crate::error::deleted("kms:DeleteAlias", result, &["NotFoundException"])
    }
}
