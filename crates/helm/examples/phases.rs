//! Prints the time spent in each rendering phase (load, values, schema, render).
use std::time::Instant;

use engine_helm::{Chart, NoLookup, RenderOptions, render, values};

fn main() {
    let path = std::env::args().nth(1).expect("CHART");
    let t = Instant::now();
    let chart = Chart::load(&path).expect("load");
    let t_load = t.elapsed();
    let t = Instant::now();
    let user = values::user_values(&[], &["hubble.tls.enabled=false".into(), "hubble.enabled=false".into()]).expect("values");
    let v = values::coalesce(&chart, &user).expect("coalesce");
    let t_values = t.elapsed();
    let t = Instant::now();
    values::validate_schema(&chart, &v).expect("schema");
    let t_schema = t.elapsed();
    let t = Instant::now();
    let r = render(&chart, &RenderOptions::new("r", "default", user, &NoLookup)).expect("render");
    let t_render = t.elapsed();
    let t = Instant::now();
    let text = r.manifest_text();
    let t_text = t.elapsed();
    eprintln!("load {t_load:?} values {t_values:?} schema {t_schema:?} render(all) {t_render:?} text {t_text:?} ({} bytes)", text.len());
}
