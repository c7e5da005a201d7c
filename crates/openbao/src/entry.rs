//! [`EntryKind`]: a kind for the named entries of a mount that are written whole and read back
//! by path, `<mount>/<name>`: JWT roles (`jwt.rs`) and PKI roles (`pki.rs`). Each entry type
//! says where it lives and how OpenBao's answer reads ([`Entry`]); the rest is here.

use crate::shared::{Shared, body, path, read_each, split_id};
use engine::TypedKind;
use engine::prelude::*;
use serde_json::Value as Json;
use std::marker::PhantomData;
use std::sync::Arc;

/// An entry `name` of `mount`, its id `<mount>/<name>`. Its attributes are `mount`, `name`
/// (replace) and the settings sent whole on each write.
pub(crate) trait Entry: Attributes {
    /// The kind's name.
    const KIND: &'static str;
    /// The operations' names: read, write, delete (`GetJwtRole`, ...).
    const OPS: [&'static str; 3];
    /// The API path of entry `name` of `mount`.
    fn api_path(mount: &str, name: &str) -> String;
    fn mount(&self) -> &str;
    fn name(&self) -> &str;
    /// The entry as OpenBao answers it.
    fn from_answer(mount: &str, name: &str, data: &Json) -> Self;
}

/// The kind of the entries `E`.
pub(crate) struct EntryKind<E>(pub Arc<Shared>, PhantomData<fn() -> E>);

impl<E: Entry> EntryKind<E> {
    pub fn new(shared: Arc<Shared>) -> Self {
        EntryKind(shared, PhantomData)
    }

    async fn read_id(&self, id: &str) -> KindResult<Option<Live<E>>> {
        let (mount, name) = split_id(id, "name")?;
        let [get, ..] = E::OPS;
        let Some(client) = self.0.reader(get).await? else {
            return Ok(None);
        };
        let data = self.0.read_data(&client, get, &E::api_path(mount, name)).await?;
        Ok(data.map(|d| Live::new(id, E::from_answer(mount, name, &d))))
    }

    async fn write(&self, id: &str, desired: &E) -> KindResult<Live<E>> {
        let (mount, name) = split_id(id, "name")?;
        let [_, put, _] = E::OPS;
        let client = self.0.client(put).await?;
        let settings = body(E::KIND, desired, &["mount", "name"])?;
        client.write(put, &E::api_path(mount, name), &settings).await?;
        let found = self.read_id(id).await?;
        found.ok_or_else(|| {
            KindError::retryable(format!("{} `{id}` not found after writing it", E::KIND))
        })
    }
}

impl<E: Entry> TypedKind for EntryKind<E> {
    type Attrs = E;
    const NAME: &'static str = E::KIND;

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let id_of = |d: &E| format!("{}/{}", d.mount(), d.name());
        read_each(requests, id_of, |id, _| async move { self.read_id(&id).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mount = path("mount", desired.mount())?;
        let name = path("name", desired.name())?;
        self.write(&format!("{mount}/{name}"), desired).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.write(&current.id, desired).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let (mount, name) = split_id(&current.id, "name")?;
        let [.., delete] = E::OPS;
        let client = self.0.client(delete).await?;
        client.delete(delete, &E::api_path(mount, name)).await?;
        Ok(())
    }
}
