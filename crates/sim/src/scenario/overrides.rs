//! `--set key=value` overrides, applied to the TOML document before it is
//! read (`docs/scenario-format.md` §10). Keys are not checked here: serde
//! refuses an unknown one when the document is read, and `super::parse`
//! reports it at the override that created it ([`apply`] says which paths
//! each override created).

use super::list;
use hopwise_config::{describe, did_you_mean, Seg};
use toml::{Table, Value};

/// Parts of an override key at most (`flow[f1].tcp.delack_timeout` has 4);
/// the overrides are applied recursively, one level per part.
const MAX_KEY_PARTS: usize = 16;

/// Where `[[node]]`, `[[link]]` and `[[flow]]` entries are.
const ENTRIES: &[&str] = &["node", "link", "flow"];

/// Splits an override key into parts: keys (bare or `"quoted"`), `[index]`
/// and `[name]` selectors (a name is a `Seg::Key` inside an array).
pub(super) fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let chars: Vec<char> = path.trim().chars().collect();
    if chars.is_empty() {
        return Err("empty key (expected key=value, e.g. duration=30s)".into());
    }
    let mut segs = Vec::new();
    let mut i = 0;
    loop {
        // A key: bare or "quoted".
        if chars.get(i) == Some(&'"') {
            let end = chars[i + 1..]
                .iter()
                .position(|&c| c == '"')
                .ok_or("unterminated quote in the key")?;
            segs.push(Seg::Key(chars[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else {
            let start = i;
            while i < chars.len() && !matches!(chars[i], '.' | '[' | ']' | '"') {
                i += 1;
            }
            let k: String = chars[start..i].iter().collect();
            let k = k.trim();
            if k.is_empty() {
                return Err(format!(
                    "empty key segment at position {} of `{}`",
                    start + 1,
                    shorten(path.trim())
                ));
            }
            segs.push(Seg::Key(k.to_string()));
        }
        // Any number of [index] or [name] selectors.
        while chars.get(i) == Some(&'[') {
            let end = chars[i + 1..]
                .iter()
                .position(|&c| c == ']')
                .ok_or("unterminated `[` in the key")?;
            let inner: String = chars[i + 1..i + 1 + end].iter().collect();
            let inner = inner.trim();
            if !inner.is_empty() && inner.chars().all(|c| c.is_ascii_digit()) {
                let n = inner
                    .parse()
                    .map_err(|_| format!("index [{inner}] is too large"))?;
                segs.push(Seg::Index(n));
            } else {
                let name = inner.trim_matches('"');
                if name.is_empty() {
                    return Err("empty `[]` in the key".into());
                }
                segs.push(Seg::Key(name.to_string()));
            }
            i += end + 2;
        }
        if segs.len() > MAX_KEY_PARTS {
            return Err(format!(
                "the key has more than {MAX_KEY_PARTS} parts; no scenario key is that deep"
            ));
        }
        match chars.get(i) {
            None => break,
            Some('.') => {
                i += 1;
                if i >= chars.len() {
                    return Err("the key ends with `.`".into());
                }
            }
            Some(c) => return Err(format!("unexpected `{c}` in the key")),
        }
    }
    Ok(segs)
}

/// `o` itself, or its start and end if it is too long to print whole (for
/// messages that quote a command-line argument).
pub fn shorten(o: &str) -> String {
    let chars: Vec<char> = o.chars().collect();
    if chars.len() <= 120 {
        return o.to_string();
    }
    let head: String = chars[..60].iter().collect();
    let tail: String = chars[chars.len() - 40..].iter().collect();
    format!("{head}…{tail} ({} characters)", chars.len())
}

/// Whether the override `o` (KEY=VALUE) sets the top-level `seed`.
pub(super) fn is_seed_key(o: &str) -> bool {
    o.split_once('=').is_some_and(
        |(path, _)| matches!(parse_path(path).as_deref(), Ok([Seg::Key(k)]) if k == "seed"),
    )
}

/// The value of a `seed=N` override whose `N` is a whole number written in
/// digits (`_` allowed between them, as in TOML); `None` for any other
/// override; an error for a number above `u64::MAX`.
pub(super) fn seed(o: &str) -> Result<Option<u64>, String> {
    let Some((_, raw)) = o.split_once('=') else {
        return Ok(None);
    };
    if !is_seed_key(o) {
        return Ok(None);
    }
    let raw = raw.trim();
    let whole = raw.starts_with(|c: char| c.is_ascii_digit())
        && raw.ends_with(|c: char| c.is_ascii_digit())
        && raw.chars().all(|c| c.is_ascii_digit() || c == '_')
        && !raw.contains("__");
    if !whole {
        return Ok(None);
    }
    let digits: String = raw.chars().filter(|&c| c != '_').collect();
    digits.parse::<u64>().map(Some).map_err(|_| {
        format!(
            "seed: must be at most {} (a seed is a 64-bit unsigned number), got {raw}",
            u64::MAX
        )
    })
}

/// A TOML value if the text parses as one, else the text as a string.
fn parse_value(raw: &str) -> Value {
    let raw = raw.trim();
    if let Ok(mut t) = format!("v = {raw}").parse::<Table>() {
        if t.len() == 1 {
            if let Some(v) = t.remove("v") {
                return v;
            }
        }
    }
    Value::String(raw.to_string())
}

/// Applies the override `o` to `doc`; returns the paths (in the document,
/// array elements by index) of the keys and tables it created.
pub(super) fn apply(doc: &mut Table, o: &str) -> Result<Vec<Vec<Seg>>, String> {
    let (path, raw) = o
        .split_once('=')
        .ok_or_else(|| "expected key=value (e.g. duration=30s, flow.f1.cc=cubic)".to_string())?;
    let segs = parse_path(path)?;
    let value = parse_value(raw);
    let mut root = Value::Table(std::mem::take(doc));
    let mut walk = Walk {
        real: Vec::new(),
        created: Vec::new(),
    };
    let r = walk.set(&mut root, &segs, "", value);
    if let Value::Table(t) = root {
        *doc = t;
    }
    r.map(|()| walk.created)
}

/// Where an override has got to in the document, and what it created.
struct Walk {
    real: Vec<Seg>,
    created: Vec<Vec<Seg>>,
}

/// The name an array element answers to in a `[name]` / `.name` selector:
/// its `name`, or the default name of a link (`a-b`) or a flow (`flow<i>`).
fn element_name(array: &str, i: usize, t: &Table) -> Option<String> {
    if let Some(Value::String(n)) = t.get("name") {
        return Some(n.clone());
    }
    match array {
        "link" => match (t.get("a"), t.get("b")) {
            (Some(Value::String(a)), Some(Value::String(b))) => Some(format!("{a}-{b}")),
            _ => None,
        },
        "flow" => Some(format!("flow{i}")),
        _ => None,
    }
}

impl Walk {
    fn set(
        &mut self,
        cur: &mut Value,
        segs: &[Seg],
        shown: &str,
        value: Value,
    ) -> Result<(), String> {
        let Some((seg, rest)) = segs.split_first() else {
            *cur = value;
            return Ok(());
        };
        match (seg, cur) {
            (Seg::Key(k), Value::Table(t)) => {
                let here = if shown.is_empty() {
                    k.clone()
                } else {
                    format!("{shown}.{k}")
                };
                self.real.push(Seg::Key(k.clone()));
                if !t.contains_key(k.as_str()) {
                    match rest.first() {
                        None => {
                            t.insert(k.clone(), value);
                            self.created.push(self.real.clone());
                            return Ok(());
                        }
                        Some(Seg::Index(n)) => {
                            return Err(format!(
                                "`{here}` does not exist, so it has no element [{n}]"
                            ))
                        }
                        Some(Seg::Key(sel)) => {
                            if self.real.len() == 1 && ENTRIES.contains(&k.as_str()) {
                                return Err(format!(
                                    "there are no [[{k}]] entries, so none is named {sel:?}"
                                ));
                            }
                            t.insert(k.clone(), Value::Table(Table::new()));
                            self.created.push(self.real.clone());
                        }
                    }
                }
                let Some(child) = t.get_mut(k.as_str()) else {
                    return Err(format!("`{here}` could not be created"));
                };
                // Shorthand strings become tables when a sub-key is set.
                if let (Some(Seg::Key(_)), Value::String(s)) = (rest.first(), &*child) {
                    let mut nt = Table::new();
                    match k.as_str() {
                        "cc" => {
                            nt.insert("algo".into(), Value::String(s.clone()));
                            *child = Value::Table(nt);
                        }
                        "queue" => {
                            nt.insert("type".into(), Value::String("droptail".into()));
                            nt.insert("limit".into(), Value::String(s.clone()));
                            *child = Value::Table(nt);
                        }
                        _ => {}
                    }
                }
                self.set(child, rest, &here, value)
            }
            (Seg::Key(k), Value::Array(items)) => {
                let array = match self.real.as_slice() {
                    [Seg::Key(a)] => a.as_str(),
                    _ => "",
                };
                let mut found = Vec::new();
                let mut names = Vec::new();
                for (i, it) in items.iter().enumerate() {
                    if let Some(n) = it.as_table().and_then(|t| element_name(array, i, t)) {
                        if &n == k {
                            found.push(i);
                        }
                        names.push(n);
                    }
                }
                let here = format!("{shown}.{k}");
                match found.as_slice() {
                    [i] => {
                        self.real.push(Seg::Index(*i));
                        self.set(&mut items[*i], rest, &here, value)
                    }
                    [] => {
                        let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
                        Err(format!(
                            "no element of `{shown}` is named {k:?}{} (names: {})",
                            did_you_mean(k, &refs),
                            if refs.is_empty() { "none".to_string() } else { list(&refs) }
                        ))
                    }
                    _ => Err(format!(
                        "several elements of `{shown}` are named {k:?}; select one by index, e.g. {shown}[{}]",
                        found[0]
                    )),
                }
            }
            (Seg::Key(k), other) => Err(format!(
                "`{shown}` is {}, not a table, so it has no key `{k}`",
                describe(other)
            )),
            (Seg::Index(n), Value::Array(items)) => {
                let len = items.len();
                let here = format!("{shown}[{n}]");
                self.real.push(Seg::Index(*n));
                match items.get_mut(*n) {
                    Some(it) => self.set(it, rest, &here, value),
                    None => Err(format!(
                        "`{shown}` has {len} element{}; index [{n}] is out of range",
                        if len == 1 { "" } else { "s" }
                    )),
                }
            }
            (Seg::Index(n), other) => Err(format!(
                "`{shown}` is {}, not an array, so [{n}] cannot index it",
                describe(other)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse() {
        let key = |k: &str| Seg::Key(k.into());
        assert_eq!(
            parse_path("flow[1].cc.target").unwrap(),
            vec![key("flow"), Seg::Index(1), key("cc"), key("target")]
        );
        assert_eq!(
            parse_path("link.\"a.b\".ab").unwrap(),
            vec![key("link"), key("a.b"), key("ab")]
        );
        assert_eq!(
            parse_path("link[bottleneck].ba").unwrap(),
            vec![key("link"), key("bottleneck"), key("ba")]
        );
        assert!(parse_path("").is_err());
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("a.").is_err());
        assert!(parse_path("a[1").is_err());
        assert!(parse_path("a[99999999999999999999999]").is_err());
        // Deep keys are refused before they are walked (one stack frame per part).
        let deep = format!("flow.f1.cc{}", ".x".repeat(30_000));
        let e = parse_path(&deep).unwrap_err();
        assert!(e.contains("more than 16 parts"), "{e}");
        assert_eq!(
            parse_path(&format!("a{}", ".b".repeat(15))).unwrap().len(),
            16
        );
    }
}
