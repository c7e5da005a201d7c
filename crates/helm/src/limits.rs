//! Bounds on what a chart can make the engine do. A hostile or broken chart gets an error that
//! names the bound, never the machine's memory: archives and their files are capped as Helm caps
//! them, the template functions that multiply their input (`repeat`, `until`, `untilStep`,
//! `seq`, the `rand*` family), YAML aliases, and a render's total output and steps are bounded.

/// A chart archive as pulled (compressed).
pub const MAX_ARCHIVE_BYTES: u64 = 20 << 20;
/// One file of a chart, decompressed (Helm's `MaxDecompressedFileSize`).
pub const MAX_FILE_BYTES: u64 = 5 << 20;
/// A whole chart, decompressed (Helm's `MaxDecompressedChartSize`).
pub const MAX_CHART_BYTES: u64 = 100 << 20;
/// A string a template function makes.
pub const MAX_STRING_BYTES: usize = 16 << 20;
/// A list a template function makes.
pub const MAX_LIST_LEN: usize = 1 << 20;
/// Bytes the templates of one render may write, in all (what `include` and `tpl` return
/// counts too).
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;
/// Template nodes one render may walk: bounds loops that write nothing.
pub const MAX_TEMPLATE_STEPS: u64 = 50_000_000;
/// Nodes that YAML aliases may expand to in one document stream.
pub const MAX_ALIAS_NODES: usize = 1 << 20;

/// `n` items of `size` bytes each, or an error naming `function` when that exceeds `max`.
pub(crate) fn within(function: &str, n: i64, size: usize, max: usize) -> Result<usize, String> {
    let n = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
    match n.checked_mul(size.max(1)) {
        Some(total) if total <= max => Ok(n),
        _ => Err(format!("{function}: the result would exceed {} MiB", max >> 20)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_multiplications_without_overflow() {
        assert_eq!(within("repeat", 3, 4, 100), Ok(3));
        assert_eq!(within("repeat", -1, 4, 100), Ok(0));
        assert!(within("repeat", i64::MAX, 2, MAX_STRING_BYTES).unwrap_err().contains("16 MiB"));
        assert!(within("until", 1 << 40, 1, MAX_LIST_LEN).is_err());
    }
}
