//! Sprig date functions and Go time formatting.

use std::rc::Rc;

use chrono::{DateTime, Datelike, FixedOffset, Local, TimeZone, Timelike};

use super::{Func, arity, s, to_i64};
use crate::objects::TimeObj;
use crate::template::{Exec, FnError};
use crate::value::Value;

type R = Result<Value, FnError>;

pub(super) static FUNCS: &[(&str, Func)] = &[
    ("now", now),
    ("date", date),
    ("dateInZone", date_in_zone),
    ("date_in_zone", date_in_zone),
    ("dateModify", date_modify),
    ("date_modify", date_modify),
    ("mustDateModify", must_date_modify),
    ("must_date_modify", must_date_modify),
    ("toDate", to_date),
    ("mustToDate", must_to_date),
    ("unixEpoch", unix_epoch),
    ("ago", ago),
    ("duration", duration),
    ("durationRound", duration_round),
    ("htmlDate", html_date),
    ("htmlDateInZone", html_date_in_zone),
];

fn now(_: &mut Exec<'_>, _a: &[Value]) -> R {
    Ok(Value::Object(Rc::new(TimeObj(Local::now().fixed_offset()))))
}

fn as_time(v: &Value) -> DateTime<FixedOffset> {
    match v {
        Value::Object(o) => {
            if let Some(Value::Int64(ns)) = o.field("UnixNano") {
                let utc = DateTime::from_timestamp_nanos(ns);
                // keep the original offset when it is shown
                if let Value::Str(_) = o.to_plain() {
                    let plain = o.to_plain();
                    if let Some(t) =
                        plain.as_str().and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    {
                        return t;
                    }
                }
                return utc.with_timezone(&Local).fixed_offset();
            }
            Local::now().fixed_offset()
        }
        Value::Int(i) | Value::Int64(i) => Local
            .timestamp_opt(*i, 0)
            .single()
            .map(|t| t.fixed_offset())
            .unwrap_or_else(|| Local::now().fixed_offset()),
        _ => Local::now().fixed_offset(),
    }
}

fn zone(name: &str) -> FixedOffset {
    // Only fixed zones are known without a tz database.
    match name {
        "UTC" | "" => FixedOffset::east_opt(0).expect("utc"),
        _ => *Local::now().offset(),
    }
}

fn date(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("date", a, 2)?;
    Ok(Value::str(go_time_format(&as_time(&a[1]), &s(&a[0]))))
}
fn date_in_zone(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("dateInZone", a, 3)?;
    let t = as_time(&a[1]).with_timezone(&zone(&s(&a[2])));
    Ok(Value::str(go_time_format(&t, &s(&a[0]))))
}
fn html_date(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("htmlDate", a, 1)?;
    Ok(Value::str(go_time_format(&as_time(&a[0]), "2006-01-02")))
}
fn html_date_in_zone(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("htmlDateInZone", a, 2)?;
    let t = as_time(&a[0]).with_timezone(&zone(&s(&a[1])));
    Ok(Value::str(go_time_format(&t, "2006-01-02")))
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub(crate) fn parse_duration(text: &str) -> Result<i64, String> {
    let orig = text;
    let err = || format!("time: invalid duration {:?}", orig);
    let mut s = text;
    let mut neg = false;
    if let Some(r) = s.strip_prefix('-') {
        neg = true;
        s = r;
    } else if let Some(r) = s.strip_prefix('+') {
        s = r;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(err());
    }
    let mut total: f64 = 0.0;
    while !s.is_empty() {
        let num_len = s.bytes().take_while(|c| c.is_ascii_digit() || *c == b'.').count();
        if num_len == 0 {
            return Err(err());
        }
        let num: f64 = s[..num_len].parse().map_err(|_| err())?;
        s = &s[num_len..];
        let unit_len = s.bytes().take_while(|c| !(c.is_ascii_digit() || *c == b'.')).count();
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let mult: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration {:?}", orig)),
            u => return Err(format!("time: unknown unit {:?} in duration {:?}", u, orig)),
        };
        total += num * mult;
    }
    let v = total.round() as i64;
    Ok(if neg { -v } else { v })
}

fn add_ns(t: &DateTime<FixedOffset>, ns: i64) -> DateTime<FixedOffset> {
    *t + chrono::Duration::nanoseconds(ns)
}

fn date_modify(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("dateModify", a, 2)?;
    match parse_duration(&s(&a[0])) {
        Ok(ns) => {
            if ns == 0 {
                return Ok(a[1].clone());
            }
            Ok(Value::Object(Rc::new(TimeObj(add_ns(&as_time(&a[1]), ns)))))
        }
        Err(_) => Ok(a[1].clone()),
    }
}
fn must_date_modify(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("mustDateModify", a, 2)?;
    let ns = parse_duration(&s(&a[0])).map_err(FnError::Msg)?;
    if ns == 0 {
        return Ok(a[1].clone());
    }
    Ok(Value::Object(Rc::new(TimeObj(add_ns(&as_time(&a[1]), ns)))))
}

fn parse_with_layout(layout: &str, value: &str) -> Result<DateTime<FixedOffset>, String> {
    let fmt = layout
        .replace("2006", "%Y")
        .replace("01", "%m")
        .replace("02", "%d")
        .replace("15", "%H")
        .replace("04", "%M")
        .replace("05", "%S")
        .replace("Z07:00", "%:z")
        .replace("-07:00", "%:z")
        .replace("-0700", "%z");
    if let Ok(t) = DateTime::parse_from_str(value, &fmt) {
        return Ok(t);
    }
    if let Ok(d) = chrono::NaiveDateTime::parse_from_str(value, &fmt) {
        return Ok(d.and_utc().fixed_offset());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(value, &fmt) {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight").and_utc().fixed_offset());
    }
    Err(format!("parsing time {value:?} as {layout:?}: cannot parse"))
}

fn to_date(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toDate", a, 2)?;
    let t = parse_with_layout(&s(&a[0]), &s(&a[1])).unwrap_or_else(|_| {
        DateTime::from_timestamp(-62135596800, 0).expect("zero").fixed_offset()
    });
    Ok(Value::Object(Rc::new(TimeObj(t))))
}
fn must_to_date(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("mustToDate", a, 2)?;
    let t = parse_with_layout(&s(&a[0]), &s(&a[1])).map_err(FnError::Msg)?;
    Ok(Value::Object(Rc::new(TimeObj(t))))
}
fn unix_epoch(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("unixEpoch", a, 1)?;
    Ok(Value::str(as_time(&a[0]).timestamp().to_string()))
}

/// Go's `time.Duration.String()`.
pub(crate) fn duration_string(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (v, unit) = if u < 1_000 {
            (u as f64, "ns")
        } else if u < 1_000_000 {
            (u as f64 / 1e3, "µs")
        } else {
            (u as f64 / 1e6, "ms")
        };
        out.push_str(&format!("{}{unit}", crate::value::format_float_g(v)));
    } else {
        let h = u / 3_600_000_000_000;
        let rem = u % 3_600_000_000_000;
        let m = rem / 60_000_000_000;
        let sns = rem % 60_000_000_000;
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        let secs = sns / 1_000_000_000;
        let frac = sns % 1_000_000_000;
        if frac == 0 {
            out.push_str(&format!("{secs}s"));
        } else {
            let f = format!("{frac:09}");
            out.push_str(&format!("{secs}.{}s", f.trim_end_matches('0')));
        }
    }
    if neg { format!("-{out}") } else { out }
}

fn ago(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("ago", a, 1)?;
    let t = as_time(&a[0]);
    let secs = (Local::now().fixed_offset() - t).num_seconds();
    Ok(Value::str(duration_string(secs * 1_000_000_000)))
}
fn duration(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("duration", a, 1)?;
    // Sprig only accepts a string or an int64 here; anything else is 0.
    let secs = match &a[0] {
        Value::Str(x) => x.parse::<i64>().unwrap_or(0),
        Value::Int64(i) => *i,
        _ => 0,
    };
    Ok(Value::str(duration_string(secs.saturating_mul(1_000_000_000))))
}
fn duration_round(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("durationRound", a, 1)?;
    let ns = match &a[0] {
        Value::Str(x) => parse_duration(x).unwrap_or(0),
        Value::Object(_) => {
            (Local::now().fixed_offset() - as_time(&a[0])).num_nanoseconds().unwrap_or(0)
        }
        v => to_i64(v),
    };
    let u = ns.unsigned_abs();
    let sec = 1_000_000_000u64;
    let (minute, hour, day, month, year) =
        (60 * sec, 3600 * sec, 86400 * sec, 30 * 86400 * sec, 365 * 86400 * sec);
    let r = if u > year {
        format!("{}y", u / year)
    } else if u > month {
        format!("{}mo", u / month)
    } else if u > day {
        format!("{}d", u / day)
    } else if u > hour {
        format!("{}h", u / hour)
    } else if u > minute {
        format!("{}m", u / minute)
    } else if u > sec {
        format!("{}s", u / sec)
    } else {
        "0s".into()
    };
    Ok(Value::str(r))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] =
    ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// Formats a time with a Go layout string.
pub fn go_time_format(t: &DateTime<FixedOffset>, layout: &str) -> String {
    let mut out = String::new();
    let b = layout.as_bytes();
    let mut i = 0;
    let off = t.offset().local_minus_utc();
    let tzname = if off == 0 {
        "UTC".to_string()
    } else {
        format!("{:+03}{:02}", off / 3600, (off.abs() % 3600) / 60)
    };
    while i < b.len() {
        let rest = &layout[i..];
        let take = |p: &str| rest.starts_with(p);
        if take("January") {
            out.push_str(MONTHS[t.month0() as usize]);
            i += 7;
        } else if take("Jan") {
            out.push_str(&MONTHS[t.month0() as usize][..3]);
            i += 3;
        } else if take("Monday") {
            out.push_str(DAYS[t.weekday().num_days_from_sunday() as usize]);
            i += 6;
        } else if take("Mon") {
            out.push_str(&DAYS[t.weekday().num_days_from_sunday() as usize][..3]);
            i += 3;
        } else if take("MST") {
            out.push_str(&tzname);
            i += 3;
        } else if take("2006") {
            out.push_str(&format!("{:04}", t.year()));
            i += 4;
        } else if take("Z07:00") || take("-07:00") {
            if off == 0 && take("Z") {
                out.push('Z');
            } else {
                out.push_str(&format!(
                    "{}{:02}:{:02}",
                    if off < 0 { '-' } else { '+' },
                    off.abs() / 3600,
                    (off.abs() % 3600) / 60
                ));
            }
            i += 6;
        } else if take("Z0700") || take("-0700") {
            if off == 0 && take("Z") {
                out.push('Z');
            } else {
                out.push_str(&format!(
                    "{}{:02}{:02}",
                    if off < 0 { '-' } else { '+' },
                    off.abs() / 3600,
                    (off.abs() % 3600) / 60
                ));
            }
            i += 5;
        } else if take("-07") {
            out.push_str(&format!("{}{:02}", if off < 0 { '-' } else { '+' }, off.abs() / 3600));
            i += 3;
        } else if take("01") {
            out.push_str(&format!("{:02}", t.month()));
            i += 2;
        } else if take("02") {
            out.push_str(&format!("{:02}", t.day()));
            i += 2;
        } else if take("_2") {
            out.push_str(&format!("{:>2}", t.day()));
            i += 2;
        } else if take("06") {
            out.push_str(&format!("{:02}", t.year() % 100));
            i += 2;
        } else if take("15") {
            out.push_str(&format!("{:02}", t.hour()));
            i += 2;
        } else if take("03") {
            out.push_str(&format!("{:02}", (t.hour() + 11) % 12 + 1));
            i += 2;
        } else if take("04") {
            out.push_str(&format!("{:02}", t.minute()));
            i += 2;
        } else if take("05") {
            out.push_str(&format!("{:02}", t.second()));
            i += 2;
        } else if take("PM") {
            out.push_str(if t.hour() >= 12 { "PM" } else { "AM" });
            i += 2;
        } else if take("pm") {
            out.push_str(if t.hour() >= 12 { "pm" } else { "am" });
            i += 2;
        } else if (take(".0") || take(".9") || take(",0") || take(",9"))
            && rest[1..].bytes().next().is_some_and(|c| c == b'0' || c == b'9')
        {
            let digit = rest.as_bytes()[1];
            let n = rest[1..].bytes().take_while(|c| *c == digit).count();
            let ns = format!("{:09}", t.nanosecond() % 1_000_000_000);
            let frac = &ns[..n.min(9)];
            if digit == b'0' {
                out.push_str(&rest[..1]);
                out.push_str(frac);
            } else {
                let trimmed = frac.trim_end_matches('0');
                if !trimmed.is_empty() {
                    out.push_str(&rest[..1]);
                    out.push_str(trimmed);
                }
            }
            i += 1 + n;
        } else if take("1") {
            out.push_str(&t.month().to_string());
            i += 1;
        } else if take("2") {
            out.push_str(&t.day().to_string());
            i += 1;
        } else if take("3") {
            out.push_str(&((t.hour() + 11) % 12 + 1).to_string());
            i += 1;
        } else if take("4") {
            out.push_str(&t.minute().to_string());
            i += 1;
        } else if take("5") {
            out.push_str(&t.second().to_string());
            i += 1;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration("0s").unwrap(), 0);
        assert!(parse_duration("abc").is_err());
        assert_eq!(duration_string(5_400_000_000_000), "1h30m0s");
        assert_eq!(duration_string(1_500_000_000), "1.5s");
    }

    #[test]
    fn layouts() {
        let t = DateTime::parse_from_rfc3339("2024-03-05T07:08:09.120Z").unwrap();
        assert_eq!(
            go_time_format(&t, "2006-01-02 15:04:05.000 Jan Mon"),
            "2024-03-05 07:08:09.120 Mar Tue"
        );
        assert_eq!(go_time_format(&t, "2006-01-02T15:04:05Z07:00"), "2024-03-05T07:08:09Z");
    }
}
