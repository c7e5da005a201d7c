//! The spec loader on arbitrary text: parsing, section checks, `[globals]` and every section
//! read as a table, error locations. It must answer with errors, never panic.
#![no_main]

use engine::spec::SpecSource;
use libfuzzer_sys::fuzz_target;

const SECTIONS: &[&str] = &["globals", "network", "openbao", "eks", "bootstrap", "llm_platform"];

fuzz_target!(|text: &str| {
    let spec = SpecSource::from_text("fuzz.toml", "fuzz", text);
    let overlaid = SpecSource::from_text("base.toml", "fuzz", "[globals]\ncloud = \"aws\"\n")
        .with_overlay(SpecSource::from_text("overlay.toml", "fuzz", text));
    for spec in std::iter::once(spec).chain(overlaid.ok()) {
        let _ = spec.check_sections(SECTIONS);
        let _ = spec.globals();
        for section in SECTIONS {
            if let Err(errors) = spec.section::<toml::Value>(section) {
                // Rendering an error walks its span back to a line and column.
                let _ = errors.to_string();
            }
        }
    }
});
