//! Template execution.

use std::collections::HashMap;
use std::rc::Rc;

use super::parse::{Arg, Branch, Cmd, Node, Pipe, Tree};
use super::{TemplateError, TemplateSet};
use crate::funcs::{FuncRef, Special};
use crate::limits;
use crate::lookup::Lookup;
use crate::value::Value;

/// An error raised by a template function.
#[derive(Debug, Clone)]
pub enum FnError {
    /// A plain error message ("error calling X: msg").
    Msg(String),
    /// `fail` / `required`: surfaced as Helm's "execution error".
    Fail(String),
    /// An error from a nested template (include / tpl).
    Nested(Box<TemplateError>),
}

impl From<String> for FnError {
    fn from(s: String) -> Self {
        FnError::Msg(s)
    }
}
impl From<&str> for FnError {
    fn from(s: &str) -> Self {
        FnError::Msg(s.to_string())
    }
}

enum Flow {
    Normal,
    Break,
    Continue,
}

const MAX_DEPTH: usize = 5_000;
const MAX_INCLUDE: usize = 1000;

/// Executes templates of a set.
pub struct Exec<'a> {
    set: &'a TemplateSet,
    overlays: Vec<HashMap<String, Rc<Tree>>>,
    /// Cluster lookups (`lookup` function).
    pub lookup: &'a dyn Lookup,
    include_counts: HashMap<String, usize>,
    vars: Vec<(Rc<str>, Value)>,
    depth: usize,
    tree: Option<Rc<Tree>>,
    name: Rc<str>,
    /// Nodes walked so far in this render ([`limits::MAX_TEMPLATE_STEPS`]).
    steps: u64,
    /// Bytes written so far in this render ([`limits::MAX_OUTPUT_BYTES`]).
    written: usize,
}

type R<T> = Result<T, TemplateError>;

impl<'a> Exec<'a> {
    /// A new executor over `set`.
    pub fn new(set: &'a TemplateSet, lookup: &'a dyn Lookup) -> Self {
        Exec {
            set,
            overlays: Vec::new(),
            lookup,
            include_counts: HashMap::new(),
            vars: Vec::new(),
            depth: 0,
            tree: None,
            name: Rc::from(""),
            steps: 0,
            written: 0,
        }
    }

    /// Counts `bytes` more of output; an error once the render's output passes its bound.
    fn wrote(&mut self, bytes: usize) -> R<()> {
        self.written = self.written.saturating_add(bytes);
        if self.written > limits::MAX_OUTPUT_BYTES {
            return Err(self
                .limit(format!("template output exceeds {} MiB", limits::MAX_OUTPUT_BYTES >> 20)));
        }
        Ok(())
    }

    fn limit(&self, message: String) -> TemplateError {
        TemplateError::Exec {
            location: self.tree.as_ref().map(|t| t.parse_name.to_string()).unwrap_or_default(),
            name: self.name.to_string(),
            node: String::new(),
            message,
        }
    }

    fn find(&self, name: &str) -> Option<Rc<Tree>> {
        for o in self.overlays.iter().rev() {
            if let Some(t) = o.get(name) {
                return Some(t.clone());
            }
        }
        self.set.templates.get(name).cloned()
    }

    /// Executes the template `name` with `dot`, returning its output.
    pub fn execute(&mut self, name: &str, dot: Value) -> R<String> {
        let tree =
            self.find(name).ok_or_else(|| TemplateError::NoTemplate { name: name.to_string() })?;
        let mut out = String::new();
        self.run_tree(&tree, name, dot, &mut out)?;
        Ok(out)
    }

    fn run_tree(&mut self, tree: &Rc<Tree>, name: &str, dot: Value, out: &mut String) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(TemplateError::Exec {
                location: tree.parse_name.to_string(),
                name: name.to_string(),
                node: String::new(),
                message: "exceeded maximum template depth".into(),
            });
        }
        let saved_vars = std::mem::replace(&mut self.vars, vec![(Rc::from("$"), dot.clone())]);
        let saved_tree = self.tree.replace(tree.clone());
        let saved_name = std::mem::replace(&mut self.name, Rc::from(name));
        let r = self.walk_list(&tree.root, &dot, out);
        self.vars = saved_vars;
        self.tree = saved_tree;
        self.name = saved_name;
        self.depth -= 1;
        r.map(|_| ())
    }

    /// `include`: runs a named template into a string.
    pub fn include(&mut self, name: &str, dot: Value) -> Result<String, FnError> {
        let count = self.include_counts.entry(name.to_string()).or_insert(0);
        if *count > MAX_INCLUDE {
            return Err(FnError::Msg(format!(
                "rendering template has a nested reference name: {name}: unable to execute template"
            )));
        }
        *count += 1;
        let r = self.execute(name, dot);
        if let Some(c) = self.include_counts.get_mut(name) {
            *c -= 1;
        }
        r.map_err(|e| FnError::Nested(Box::new(e)))
    }

    /// `tpl`: parses and runs a template string.
    pub fn tpl(&mut self, text: &str, dot: Value) -> Result<String, FnError> {
        let (tree, defines) = super::parse("gotpl", text, &|_| false)
            .map_err(|e| FnError::Msg(format!("cannot parse template {text:?}: {e}")))?;
        self.overlays.push(defines);
        let r = {
            let mut out = String::new();
            self.run_tree(&tree, "gotpl", dot, &mut out).map(|_| out)
        };
        self.overlays.pop();
        match r {
            Ok(s) => Ok(s.replace("<no value>", "")),
            Err(TemplateError::Fail { location, message }) => {
                Err(FnError::Nested(Box::new(TemplateError::Fail { location, message })))
            }
            Err(e) => {
                Err(FnError::Msg(format!("error during tpl function execution for {text:?}: {e}")))
            }
        }
    }

    fn walk_list(&mut self, list: &[Node], dot: &Value, out: &mut String) -> R<Flow> {
        self.step()?;
        for n in list {
            match self.walk(n, dot, out)? {
                Flow::Normal => {}
                f => return Ok(f),
            }
        }
        Ok(Flow::Normal)
    }

    /// Counts one step of the render (a node, or a loop iteration); an error past the bound.
    fn step(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps > limits::MAX_TEMPLATE_STEPS {
            let steps = limits::MAX_TEMPLATE_STEPS;
            return Err(self.limit(format!("template execution exceeds {steps} steps")));
        }
        Ok(())
    }

    fn walk(&mut self, node: &Node, dot: &Value, out: &mut String) -> R<Flow> {
        self.step()?;
        match node {
            Node::Text(t) => {
                self.wrote(t.len())?;
                out.push_str(t);
            }
            Node::Action(pipe) => {
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.print_value(&v, out, pipe)?;
                }
            }
            Node::If(b) => {
                let mark = self.vars.len();
                let v = self.eval_pipeline(dot, &b.pipe)?;
                let r = if v.truthy() {
                    self.walk_list(&b.list, dot, out)
                } else if let Some(el) = &b.else_list {
                    self.walk_list(el, dot, out)
                } else {
                    Ok(Flow::Normal)
                };
                self.vars.truncate(mark);
                return r;
            }
            Node::With(b) => {
                let mark = self.vars.len();
                let v = self.eval_pipeline(dot, &b.pipe)?;
                let r = if v.truthy() {
                    self.walk_list(&b.list, &v, out)
                } else if let Some(el) = &b.else_list {
                    self.walk_list(el, dot, out)
                } else {
                    Ok(Flow::Normal)
                };
                self.vars.truncate(mark);
                return r;
            }
            Node::Range(b) => return self.walk_range(b, dot, out),
            Node::Template { pos, name, pipe } => {
                let d = match pipe {
                    Some(p) => self.eval_pipeline(dot, p)?,
                    None => Value::Nil,
                };
                let tree = match self.find(name) {
                    Some(t) => t,
                    None => {
                        return Err(self.err_at(
                            *pos,
                            &format!("template {name}"),
                            &format!("template {name:?} not defined"),
                        ));
                    }
                };
                self.run_tree(&tree, name, d, out)?;
            }
            Node::Break(_) => return Ok(Flow::Break),
            Node::Continue(_) => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn walk_range(&mut self, b: &Branch, dot: &Value, out: &mut String) -> R<Flow> {
        let mark = self.vars.len();
        let v = self.eval_pipeline(dot, &b.pipe)?;
        // The pipeline's declared variables were pushed; we set them per iteration.
        let decl = &b.pipe.decl;
        let assign = |this: &mut Self, k: Value, e: &Value| {
            if b.pipe.is_assign {
                if decl.len() == 1 {
                    this.set_var(&decl[0], e.clone());
                } else if decl.len() == 2 {
                    this.set_var(&decl[0], k);
                    this.set_var(&decl[1], e.clone());
                }
                return;
            }
            this.vars.truncate(mark);
            if decl.len() == 1 {
                this.vars.push((decl[0].clone(), e.clone()));
            } else if decl.len() == 2 {
                this.vars.push((decl[0].clone(), k));
                this.vars.push((decl[1].clone(), e.clone()));
            }
        };
        let mut ran = false;
        match &v {
            Value::List(l) => {
                for (i, e) in l.iter().enumerate() {
                    ran = true;
                    assign(self, Value::Int(i as i64), e);
                    let inner = self.vars.len();
                    let f = self.walk_list(&b.list, e, out)?;
                    self.vars.truncate(inner);
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Map(m) => {
                let entries: Vec<(String, Value)> =
                    m.borrow().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                for (k, e) in entries {
                    ran = true;
                    assign(self, Value::str(&k), &e);
                    let inner = self.vars.len();
                    let f = self.walk_list(&b.list, &e, out)?;
                    self.vars.truncate(inner);
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Int(n) | Value::Int64(n) => {
                if decl.len() > 1 {
                    return Err(self.err_at(
                        b.pos,
                        "range",
                        "can't use two iteration variables when ranging over an integer",
                    ));
                }
                for i in 0..*n {
                    ran = true;
                    let iv = Value::Int(i);
                    assign(self, iv.clone(), &iv);
                    let inner = self.vars.len();
                    let f = self.walk_list(&b.list, &iv, out)?;
                    self.vars.truncate(inner);
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Nil => {}
            Value::Object(o) => match o.to_plain() {
                Value::List(l) => {
                    for (i, e) in l.iter().enumerate() {
                        ran = true;
                        assign(self, Value::Int(i as i64), e);
                        let inner = self.vars.len();
                        let f = self.walk_list(&b.list, e, out)?;
                        self.vars.truncate(inner);
                        if let Flow::Break = f {
                            break;
                        }
                    }
                }
                Value::Map(m) => {
                    let entries: Vec<(String, Value)> =
                        m.borrow().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    for (k, e) in entries {
                        ran = true;
                        assign(self, Value::str(&k), &e);
                        let inner = self.vars.len();
                        let f = self.walk_list(&b.list, &e, out)?;
                        self.vars.truncate(inner);
                        if let Flow::Break = f {
                            break;
                        }
                    }
                }
                _ => {
                    return Err(self.err_at(
                        b.pos,
                        "range",
                        &format!("range can't iterate over {}", v.to_go_string()),
                    ));
                }
            },
            other => {
                return Err(self.err_at(
                    b.pos,
                    "range",
                    &format!("range can't iterate over {}", other.to_go_string()),
                ));
            }
        }
        if !ran && let Some(el) = &b.else_list {
            self.vars.truncate(mark);
            let r = self.walk_list(el, dot, out);
            self.vars.truncate(mark);
            return r;
        }
        self.vars.truncate(mark);
        Ok(Flow::Normal)
    }

    fn set_var(&mut self, name: &str, v: Value) {
        for (n, slot) in self.vars.iter_mut().rev() {
            if &**n == name {
                *slot = v;
                return;
            }
        }
    }

    fn var(&self, name: &str) -> Value {
        for (n, v) in self.vars.iter().rev() {
            if &**n == name {
                return v.clone();
            }
        }
        Value::Nil
    }

    fn print_value(&mut self, v: &Value, out: &mut String, _pipe: &Pipe) -> R<()> {
        let text = match v {
            Value::Nil => std::borrow::Cow::Borrowed("<no value>"),
            Value::Str(s) => std::borrow::Cow::Borrowed(&**s),
            other => std::borrow::Cow::Owned(other.to_go_string()),
        };
        self.wrote(text.len())?;
        out.push_str(&text);
        Ok(())
    }

    fn location(&self, pos: usize) -> String {
        match &self.tree {
            Some(t) => t.location(pos),
            None => String::new(),
        }
    }

    fn err_at(&self, pos: usize, node: &str, msg: &str) -> TemplateError {
        TemplateError::Exec {
            location: self.location(pos),
            name: self.name.to_string(),
            node: node.to_string(),
            message: msg.to_string(),
        }
    }

    fn eval_pipeline(&mut self, dot: &Value, pipe: &Pipe) -> R<Value> {
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            value = Some(v);
        }
        let value = value.unwrap_or_default();
        if pipe.is_assign {
            for d in &pipe.decl {
                self.set_var(d, value.clone());
            }
        } else {
            for d in &pipe.decl {
                self.vars.push((d.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn eval_command(&mut self, dot: &Value, cmd: &Cmd, fin: Option<Value>) -> R<Value> {
        let first = &cmd.args[0];
        match first {
            Arg::Field(pos, fields) => {
                let recv = dot.clone();
                self.eval_field_chain(dot, recv, fields, &cmd.args[1..], fin, *pos, cmd, false)
            }
            Arg::Chain(base, fields) => {
                let recv = self.eval_arg(dot, base, cmd)?;
                self.eval_field_chain(dot, recv, fields, &cmd.args[1..], fin, cmd.pos, cmd, false)
            }
            Arg::Variable(pos, name, fields) => {
                let v = self.var(name);
                if fields.is_empty() {
                    if cmd.args.len() > 1 || fin.is_some() {
                        return Err(self.err_at(
                            *pos,
                            &cmd.text,
                            &format!("can't give argument to non-function {name}"),
                        ));
                    }
                    return Ok(v);
                }
                self.eval_field_chain(dot, v, fields, &cmd.args[1..], fin, *pos, cmd, false)
            }
            Arg::Func(pos, name, f) => {
                self.eval_call(dot, *pos, name, *f, &cmd.args[1..], fin, cmd)
            }
            Arg::Pipe(p) => {
                if cmd.args.len() > 1 || fin.is_some() {
                    return Err(self.err_at(
                        cmd.pos,
                        &cmd.text,
                        "can't give argument to non-function",
                    ));
                }
                let mark = self.vars.len();
                let v = self.eval_pipeline(dot, p)?;
                self.vars.truncate(mark);
                Ok(v)
            }
            other => {
                if cmd.args.len() > 1 || fin.is_some() {
                    return Err(self.err_at(
                        cmd.pos,
                        &cmd.text,
                        &format!("can't give argument to non-function {}", cmd.text),
                    ));
                }
                self.eval_arg(dot, other, cmd)
            }
        }
    }

    fn eval_arg(&mut self, dot: &Value, arg: &Arg, cmd: &Cmd) -> R<Value> {
        match arg {
            Arg::Dot => Ok(dot.clone()),
            Arg::Nil => Ok(Value::Nil),
            Arg::Const(v) => Ok(v.clone()),
            Arg::Field(pos, fields) => {
                self.eval_field_chain(dot, dot.clone(), fields, &[], None, *pos, cmd, false)
            }
            Arg::Variable(pos, name, fields) => {
                let v = self.var(name);
                if fields.is_empty() {
                    Ok(v)
                } else {
                    self.eval_field_chain(dot, v, fields, &[], None, *pos, cmd, false)
                }
            }
            Arg::Chain(base, fields) => {
                let recv = self.eval_arg(dot, base, cmd)?;
                self.eval_field_chain(dot, recv, fields, &[], None, cmd.pos, cmd, false)
            }
            Arg::Pipe(p) => {
                let mark = self.vars.len();
                let v = self.eval_pipeline(dot, p)?;
                self.vars.truncate(mark);
                Ok(v)
            }
            Arg::Func(pos, name, f) => self.eval_call(dot, *pos, name, *f, &[], None, cmd),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_field_chain(
        &mut self,
        dot: &Value,
        mut recv: Value,
        fields: &[Rc<str>],
        args: &[Arg],
        fin: Option<Value>,
        pos: usize,
        cmd: &Cmd,
        _unused: bool,
    ) -> R<Value> {
        let n = fields.len();
        for (i, f) in fields.iter().enumerate() {
            let last = i + 1 == n;
            // Nil reached through a map lookup: Go reports a nil pointer.
            if matches!(recv, Value::Nil) {
                if i == 0 {
                    return Ok(Value::Nil);
                }
                return Err(self.err_at(
                    pos,
                    &cmd.text,
                    &format!("nil pointer evaluating interface {{}}.{f}"),
                ));
            }
            let has_args = last && (!args.is_empty() || fin.is_some());
            recv = match &recv {
                Value::Map(m) => {
                    if has_args {
                        return Err(self.err_at(
                            pos,
                            &cmd.text,
                            &format!("{f} is not a method but has arguments"),
                        ));
                    }
                    let found = m.borrow().get(&**f).cloned();
                    match found {
                        Some(v) => v,
                        // Helm's `Values` map type has an AsMap method.
                        None if &**f == "AsMap" => recv.clone(),
                        None => Value::Nil,
                    }
                }
                Value::Object(o) => {
                    if o.has_method(f) {
                        let mut av = Vec::new();
                        if last {
                            for a in args {
                                av.push(self.eval_arg(dot, a, cmd)?);
                            }
                            if let Some(fv) = &fin {
                                av.push(fv.clone());
                            }
                        }
                        match o.call(f, &av) {
                            Some(Ok(v)) => v,
                            Some(Err(e)) => {
                                return Err(self.err_at(
                                    pos,
                                    &cmd.text,
                                    &format!("error calling {f}: {e}"),
                                ));
                            }
                            None => {
                                return Err(self.err_at(
                                    pos,
                                    &cmd.text,
                                    &format!("can't evaluate field {f}"),
                                ));
                            }
                        }
                    } else if let Some(v) = o.field(f) {
                        if has_args {
                            return Err(self.err_at(
                                pos,
                                &cmd.text,
                                &format!("{f} has arguments but cannot be invoked as function"),
                            ));
                        }
                        v
                    } else {
                        return Err(self.err_at(
                            pos,
                            &cmd.text,
                            &format!("can't evaluate field {f} in type {}", o.type_name()),
                        ));
                    }
                }
                other => {
                    return Err(self.err_at(
                        pos,
                        &cmd.text,
                        &format!("can't evaluate field {f} in type {}", other.type_name()),
                    ));
                }
            };
        }
        Ok(recv)
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_call(
        &mut self,
        dot: &Value,
        pos: usize,
        name: &str,
        f: FuncRef,
        args: &[Arg],
        fin: Option<Value>,
        cmd: &Cmd,
    ) -> R<Value> {
        match f {
            FuncRef::Special(Special::And) | FuncRef::Special(Special::Or) => {
                let is_and = matches!(f, FuncRef::Special(Special::And));
                let total = args.len() + usize::from(fin.is_some());
                if total == 0 {
                    return Err(self.err_at(
                        pos,
                        &cmd.text,
                        &format!("wrong number of args for {name}: want at least 1 got 0"),
                    ));
                }
                let mut v = Value::Nil;
                for a in args {
                    v = self.eval_arg(dot, a, cmd)?;
                    if v.truthy() != is_and {
                        return Ok(v);
                    }
                }
                if let Some(fv) = fin {
                    v = fv;
                }
                Ok(v)
            }
            FuncRef::Normal(func) => {
                let mut av = Vec::with_capacity(args.len() + 1);
                for a in args {
                    av.push(self.eval_arg(dot, a, cmd)?);
                }
                if let Some(fv) = fin {
                    av.push(fv);
                }
                match func(self, &av) {
                    Ok(v) => Ok(v),
                    Err(FnError::Msg(m)) => Err(self.err_at(pos, &cmd.text, &format!("error calling {name}: {m}"))),
                    Err(FnError::Fail(m)) => Err(TemplateError::Fail {
                        location: self.location(pos),
                        message: m,
                    }),
                    Err(FnError::Nested(e)) => match *e {
                        TemplateError::Fail { message, .. } => Err(TemplateError::Fail {
                            location: self.location(pos),
                            message,
                        }),
                        TemplateError::NoTemplate { name: missing } => Err(self.err_at(
                            pos,
                            &cmd.text,
                            &format!("error calling {name}:\ntemplate: no template {missing:?} associated with template \"gotpl\""),
                        )),
                        other => Err(self.err_at(pos, &cmd.text, &format!("error calling {name}:\n{other}"))),
                    },
                }
            }
        }
    }
}
