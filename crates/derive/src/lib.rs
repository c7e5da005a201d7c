//! `#[derive(Attributes)]` for the attribute struct of a typed resource kind.
//!
//! Each field carries its diff metadata in `#[attr(...)]`:
//!
//! | flag | meaning |
//! |---|---|
//! | `in_place` | a change is applied to the existing resource |
//! | `replace` | a change replaces the resource |
//! | `computed` | set by the cloud (ids, ARNs, status); never diffed |
//! | `setting` | tunes the engine's work on the resource (timeouts); never diffed |
//! | `unordered` | a list compared as a set |
//! | `sensitive` | never printed, never stored in clear |
//! | `normalize = path` | `fn(&serde_json::Value) -> serde_json::Value` applied to both sides before comparing |
//! | `tags` | the resource's tag map (where the engine's ownership tags live) |
//!
//! The derive writes `impl engine::Attributes` (the field table) and a companion struct
//! `<Name>Changes` with one `bool` per diffed field, which `TypedKind::update` receives, so a
//! kind never diffs by hand and a misspelt field is a compile error. Field names are the serde
//! names (`#[serde(rename = "...")]` is honoured).
//!
//! Hand-written rather than `macro_rules!` so the struct stays an ordinary Rust struct with
//! ordinary serde attributes.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, LitStr, parse_macro_input};

#[proc_macro_derive(Attributes, attributes(attr))]
pub fn derive_attributes(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Default)]
struct FieldMeta {
    update: Option<&'static str>,
    unordered: bool,
    sensitive: bool,
    tags: bool,
    normalize: Option<syn::Path>,
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(input, "Attributes is derived for structs"));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(syn::Error::new_spanned(input, "Attributes needs named fields"));
    };
    let name = &input.ident;
    let vis = &input.vis;
    let changes = format_ident!("{}Changes", name);
    let mut table = Vec::new();
    let mut diffed = Vec::new();
    let mut tags_field = None;
    for field in &named.named {
        let ident = field.ident.as_ref().expect("named field");
        let meta = field_meta(field)?;
        let serde_name = serde_rename(field)?.unwrap_or_else(|| ident.to_string());
        let update = meta.update.ok_or_else(|| {
            syn::Error::new_spanned(
                ident,
                "say how the field changes: #[attr(in_place)], #[attr(replace)], \
                 #[attr(computed)] or #[attr(setting)]",
            )
        })?;
        let update_ident = syn::Ident::new(update, Span::call_site());
        let unordered = meta.unordered;
        let sensitive = meta.sensitive;
        let normalize = match &meta.normalize {
            Some(path) => quote!(::core::option::Option::Some(#path)),
            None => quote!(::core::option::Option::None),
        };
        table.push(quote! {
            ::engine::Field {
                name: #serde_name,
                update: ::engine::FieldUpdate::#update_ident,
                unordered: #unordered,
                sensitive: #sensitive,
                normalize: #normalize,
            }
        });
        if matches!(update, "InPlace" | "Replace") {
            diffed.push((ident.clone(), serde_name));
        }
        if meta.tags {
            if tags_field.is_some() {
                return Err(syn::Error::new_spanned(ident, "only one field holds the tags"));
            }
            tags_field = Some(ident.clone());
        }
    }
    let tags_fn = tags_field.map(|f| {
        quote! {
            fn tags(&self) -> ::core::option::Option<&::engine::Tags> {
                ::core::option::Option::Some(&self.#f)
            }
            fn tags_mut(&mut self) -> ::core::option::Option<&mut ::engine::Tags> {
                ::core::option::Option::Some(&mut self.#f)
            }
        }
    });
    let change_fields = diffed.iter().map(|(i, _)| quote!(pub #i: bool,));
    let mark_arms = diffed.iter().map(|(i, n)| quote!(#n => { self.#i = true; true }));
    let name_pushes = diffed.iter().map(|(i, n)| quote!(if self.#i { names.push(#n); }));
    let doc = LitStr::new(
        &format!("Which fields of [`{name}`] differ between the resource and the spec."),
        Span::call_site(),
    );
    Ok(quote! {
        impl ::engine::Attributes for #name {
            type Changes = #changes;
            const FIELDS: &'static [::engine::Field] = &[#(#table),*];
            #tags_fn
        }

        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #vis struct #changes {
            #(#change_fields)*
        }

        impl ::engine::Changes for #changes {
            fn mark(&mut self, name: &str) -> bool {
                match name {
                    #(#mark_arms)*
                    _ => false,
                }
            }

            fn names(&self) -> ::std::vec::Vec<&'static str> {
                let mut names = ::std::vec::Vec::new();
                #(#name_pushes)*
                names
            }
        }
    })
}

fn field_meta(field: &syn::Field) -> syn::Result<FieldMeta> {
    let mut meta = FieldMeta::default();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("attr")) {
        attr.parse_nested_meta(|m| {
            let set_update = |meta: &mut FieldMeta, update: &'static str| {
                if meta.update.replace(update).is_some() {
                    return Err(m.error("a field changes in one way only"));
                }
                Ok(())
            };
            if m.path.is_ident("in_place") {
                set_update(&mut meta, "InPlace")
            } else if m.path.is_ident("replace") {
                set_update(&mut meta, "Replace")
            } else if m.path.is_ident("computed") {
                set_update(&mut meta, "Computed")
            } else if m.path.is_ident("setting") {
                set_update(&mut meta, "Setting")
            } else if m.path.is_ident("unordered") {
                meta.unordered = true;
                Ok(())
            } else if m.path.is_ident("sensitive") {
                meta.sensitive = true;
                Ok(())
            } else if m.path.is_ident("tags") {
                meta.tags = true;
                Ok(())
            } else if m.path.is_ident("normalize") {
                meta.normalize = Some(m.value()?.parse()?);
                Ok(())
            } else {
                Err(m.error(
                    "unknown flag (in_place, replace, computed, setting, unordered, sensitive, \
                     tags, normalize = path)",
                ))
            }
        })?;
    }
    Ok(meta)
}

/// The field's `#[serde(rename = "...")]`, if any.
fn serde_rename(field: &syn::Field) -> syn::Result<Option<String>> {
    let mut rename = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|m| {
            if m.path.is_ident("rename") {
                let lit: LitStr = m.value()?.parse()?;
                rename = Some(lit.value());
            } else if m.input.peek(syn::Token![=]) {
                // Other `key = value` options: skip the value.
                let _: syn::Expr = m.value()?.parse()?;
            } else if m.input.peek(syn::token::Paren) {
                // Other `key(...)` options: skip them.
                m.parse_nested_meta(|inner| {
                    if inner.input.peek(syn::Token![=]) {
                        let _: syn::Expr = inner.value()?.parse()?;
                    }
                    Ok(())
                })?;
            }
            Ok(())
        })?;
    }
    Ok(rename)
}
