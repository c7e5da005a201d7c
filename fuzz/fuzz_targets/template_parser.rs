//! The Go template parser on arbitrary text, then a run of what parses (bounded by the render
//! limits). It must answer with errors, never panic or hang.
#![no_main]

use engine_helm::NoLookup;
use engine_helm::template::{Exec, TemplateSet};
use engine_helm::value::Value;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let mut set = TemplateSet::default();
    if set.add("fuzz", text).is_ok() {
        let mut exec = Exec::new(&set, &NoLookup);
        let _ = exec.execute("fuzz", Value::Nil);
    }
});
