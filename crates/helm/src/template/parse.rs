//! Lexer and parser for Go's text/template language.

use std::collections::HashMap;
use std::rc::Rc;

use super::TemplateError;
use crate::funcs::{self, FuncRef};
use crate::value::Value;

/// A parsed template body.
#[derive(Debug)]
pub struct Tree {
    /// Template (file) name used in error locations.
    pub parse_name: Rc<str>,
    /// Source text (for line/column computation).
    pub source: Rc<str>,
    /// Root list.
    pub root: Vec<Node>,
}

impl Tree {
    /// `name:line:col` for a byte offset, Go style (column is 0-based).
    pub fn location(&self, pos: usize) -> String {
        let pos = pos.min(self.source.len());
        let text = &self.source[..pos];
        let line = 1 + text.matches('\n').count();
        let col = match text.rfind('\n') {
            Some(nl) => pos - nl - 1,
            None => pos,
        };
        format!("{}:{}:{}", self.parse_name, line, col)
    }
}

/// A node of the template tree.
#[derive(Debug)]
pub enum Node {
    Text(Rc<str>),
    Action(Pipe),
    If(Branch),
    Range(Branch),
    With(Branch),
    Template { pos: usize, name: Rc<str>, pipe: Option<Pipe> },
    Break(usize),
    Continue(usize),
}

/// if / with / range body.
#[derive(Debug)]
pub struct Branch {
    pub pos: usize,
    pub pipe: Pipe,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

/// A pipeline.
#[derive(Debug)]
pub struct Pipe {
    pub pos: usize,
    pub decl: Vec<Rc<str>>,
    pub is_assign: bool,
    pub cmds: Vec<Cmd>,
}

/// A command of a pipeline.
#[derive(Debug)]
pub struct Cmd {
    pub pos: usize,
    pub args: Vec<Arg>,
    /// Source snippet, for error messages.
    pub text: Rc<str>,
}

/// An operand.
#[derive(Debug)]
pub enum Arg {
    Dot,
    Nil,
    Const(Value),
    Field(usize, Vec<Rc<str>>),
    Variable(usize, Rc<str>, Vec<Rc<str>>),
    Func(usize, Rc<str>, FuncRef),
    Pipe(Box<Pipe>),
    Chain(Box<Arg>, Vec<Rc<str>>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Field(Rc<str>),
    Var(Rc<str>),
    Ident(Rc<str>),
    Str(Rc<str>),
    Num(Value),
    Bool(bool),
    Nil,
    Dot,
    Pipe,
    LParen,
    RParen,
    Declare,
    Assign,
    Comma,
    // keywords
    If,
    Else,
    End,
    Range,
    With,
    Define,
    Template,
    Block,
    Break,
    Continue,
}

/// Templates defined in a file, by name.
pub type Defines = HashMap<String, Rc<Tree>>;

/// Parses a template file: its main tree plus the `define`d templates.
pub fn parse(
    name: &str,
    src: &str,
    extra_funcs: &dyn Fn(&str) -> bool,
) -> Result<(Rc<Tree>, Defines), TemplateError> {
    let source: Rc<str> = Rc::from(src);
    let parse_name: Rc<str> = Rc::from(name);
    let mut p = Parser {
        src,
        pos: 0,
        toks: Vec::new(),
        adj: Vec::new(),
        action_end: 0,
        tpos: 0,
        name: parse_name.clone(),
        source: source.clone(),
        defines: HashMap::new(),
        vars: vec![Rc::from("$")],
        trim_next: false,
        extra_funcs,
        range_depth: 0,
    };
    let (root, end) = p.list(true)?;
    if let Some(e) = end {
        return Err(p.err_at(e.1, &format!("unexpected {{{{{}}}}}", e.0)));
    }
    let tree = Rc::new(Tree { parse_name, source, root });
    Ok((tree, p.defines))
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    toks: Vec<(Tok, usize)>,
    /// Whether token i directly follows token i-1 (no space between).
    adj: Vec<bool>,
    /// End offset of the current action's last token.
    action_end: usize,
    tpos: usize,
    name: Rc<str>,
    source: Rc<str>,
    defines: HashMap<String, Rc<Tree>>,
    vars: Vec<Rc<str>>,
    trim_next: bool,
    extra_funcs: &'a dyn Fn(&str) -> bool,
    range_depth: usize,
}

/// Why a list ended.
type End = (String, usize);

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl<'a> Parser<'a> {
    fn err_at(&self, pos: usize, msg: &str) -> TemplateError {
        let text = &self.source[..pos.min(self.source.len())];
        let line = 1 + text.matches('\n').count();
        TemplateError::Parse {
            location: format!("{}:{}", self.name, line),
            message: msg.to_string(),
        }
    }

    /// Parses nodes until `{{end}}`/`{{else ...}}` or EOF.
    /// Returns the terminating keyword (`end`, `else`) if any.
    fn list(&mut self, top: bool) -> Result<(Vec<Node>, Option<End>), TemplateError> {
        let mut nodes = Vec::new();
        loop {
            // text up to next "{{"
            let rest = &self.src[self.pos..];
            let next = rest.find("{{");
            let (text_end, has_action) = match next {
                Some(i) => (self.pos + i, true),
                None => (self.src.len(), false),
            };
            let mut text = &self.src[self.pos..text_end];
            if self.trim_next {
                text = text.trim_start_matches(|c: char| c.is_ascii() && is_space(c as u8));
                self.trim_next = false;
            }
            let mut action_start = text_end + 2;
            let mut left_trim = false;
            if has_action {
                let after = &self.src.as_bytes()[text_end + 2..];
                if after.len() >= 2 && after[0] == b'-' && is_space(after[1]) {
                    left_trim = true;
                    action_start += 2;
                }
            }
            if left_trim {
                text = text.trim_end_matches(|c: char| c.is_ascii() && is_space(c as u8));
            }
            if !text.is_empty() {
                nodes.push(Node::Text(Rc::from(text)));
            }
            if !has_action {
                self.pos = self.src.len();
                if !top {
                    return Err(self.err_at(self.src.len(), "unexpected EOF"));
                }
                return Ok((nodes, None));
            }
            // comment?
            let mut ap = action_start;
            while ap < self.src.len() && self.src.as_bytes()[ap] == b' ' && left_trim {
                ap += 1;
            }
            if self.src[action_start..].starts_with("/*") {
                let body_start = action_start + 2;
                let Some(end) = self.src[body_start..].find("*/") else {
                    return Err(self.err_at(action_start, "unclosed comment"));
                };
                let mut after = body_start + end + 2;
                let rest = &self.src[after..];
                if rest.starts_with(" -}}")
                    || rest.starts_with("\t-}}")
                    || rest.starts_with("\n-}}")
                    || rest.starts_with("\r-}}")
                {
                    self.trim_next = true;
                    after += 4;
                } else if rest.starts_with("}}") {
                    after += 2;
                } else {
                    return Err(self.err_at(after, "comment ends before closing delimiter"));
                }
                self.pos = after;
                continue;
            }
            let _ = ap;
            self.lex_action(action_start)?;
            // dispatch on first token
            let (first, fpos) = match self.toks.first().cloned() {
                Some(t) => t,
                None => return Err(self.err_at(action_start, "missing value for command")),
            };
            match first {
                Tok::End => {
                    self.expect_done(1)?;
                    return Ok((nodes, Some(("end".into(), fpos))));
                }
                Tok::Else => {
                    return Ok((nodes, Some(("else".into(), fpos))));
                }
                Tok::If | Tok::With | Tok::Range => {
                    self.tpos = 1;
                    let node = self.branch(first, fpos)?;
                    nodes.push(node);
                }
                Tok::Define => {
                    self.tpos = 1;
                    self.define(fpos)?;
                }
                Tok::Block => {
                    self.tpos = 1;
                    let node = self.block(fpos)?;
                    nodes.push(node);
                }
                Tok::Template => {
                    self.tpos = 1;
                    let name = match self.toks.get(1) {
                        Some((Tok::Str(s), _)) => s.clone(),
                        _ => return Err(self.err_at(fpos, "unexpected token in template clause")),
                    };
                    self.tpos = 2;
                    let pipe = if self.tpos < self.toks.len() {
                        Some(self.pipeline("template", false)?)
                    } else {
                        None
                    };
                    nodes.push(Node::Template { pos: fpos, name, pipe });
                }
                Tok::Break | Tok::Continue => {
                    if self.range_depth == 0 {
                        let kw = if first == Tok::Break { "break" } else { "continue" };
                        return Err(
                            self.err_at(fpos, &format!("{{{{{kw}}}}} outside {{{{range}}}}"))
                        );
                    }
                    self.expect_done(1)?;
                    nodes.push(if first == Tok::Break {
                        Node::Break(fpos)
                    } else {
                        Node::Continue(fpos)
                    });
                }
                _ => {
                    self.tpos = 0;
                    let pipe = self.pipeline("command", true)?;
                    nodes.push(Node::Action(pipe));
                }
            }
        }
    }

    fn expect_done(&self, at: usize) -> Result<(), TemplateError> {
        if let Some((t, p)) = self.toks.get(at) {
            return Err(self.err_at(*p, &format!("unexpected {t:?} in end")));
        }
        Ok(())
    }

    fn branch(&mut self, kind: Tok, pos: usize) -> Result<Node, TemplateError> {
        let ctx = match kind {
            Tok::If => "if",
            Tok::With => "with",
            _ => "range",
        };
        let mark = self.vars.len();
        let pipe = self.pipeline(ctx, kind != Tok::If)?;
        if kind == Tok::Range {
            self.range_depth += 1;
        }
        let (list, end) = self.list(false)?;
        if kind == Tok::Range {
            self.range_depth -= 1;
        }
        let Some((end_kw, epos)) = end else {
            return Err(self.err_at(self.src.len(), "unexpected EOF"));
        };
        let mut else_list = None;
        if end_kw == "else" {
            // `else`, `else if ...`, `else with ...`
            match self.toks.get(1).cloned() {
                Some((Tok::If, p2)) if kind == Tok::If => {
                    self.tpos = 2;
                    self.vars.truncate(mark);
                    let node = self.branch(Tok::If, p2)?;
                    else_list = Some(vec![node]);
                }
                Some((Tok::With, p2)) if kind == Tok::With => {
                    self.tpos = 2;
                    self.vars.truncate(mark);
                    let node = self.branch(Tok::With, p2)?;
                    else_list = Some(vec![node]);
                }
                Some((t, p)) => {
                    return Err(self.err_at(p, &format!("unexpected {t:?} in else")));
                }
                None => {
                    let (el, end2) = self.list(false)?;
                    match end2 {
                        Some((k, _)) if k == "end" => {}
                        Some((_, p)) => return Err(self.err_at(p, "expected end; found else")),
                        None => return Err(self.err_at(epos, "unexpected EOF")),
                    }
                    else_list = Some(el);
                }
            }
        }
        self.vars.truncate(mark);
        let b = Branch { pos, pipe, list, else_list };
        Ok(match kind {
            Tok::If => Node::If(b),
            Tok::With => Node::With(b),
            _ => Node::Range(b),
        })
    }

    fn define(&mut self, pos: usize) -> Result<(), TemplateError> {
        let name = match self.toks.get(1) {
            Some((Tok::Str(s), _)) => s.clone(),
            _ => return Err(self.err_at(pos, "unexpected token in define clause")),
        };
        if self.toks.len() > 2 {
            return Err(self.err_at(pos, "unexpected token in define clause"));
        }
        let saved_vars = std::mem::replace(&mut self.vars, vec![Rc::from("$")]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.list(false)?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        match end {
            Some((k, _)) if k == "end" => {}
            Some((_, p)) => return Err(self.err_at(p, "unexpected else in define")),
            None => return Err(self.err_at(pos, "unexpected EOF")),
        }
        let tree = Rc::new(Tree {
            parse_name: self.name.clone(),
            source: self.source.clone(),
            root: list,
        });
        // An empty redefinition does not replace an existing template.
        let empty = tree.root.iter().all(|n| matches!(n, Node::Text(t) if t.trim().is_empty()));
        if !(empty && self.defines.contains_key(name.as_ref())) {
            self.defines.insert(name.to_string(), tree);
        }
        Ok(())
    }

    fn block(&mut self, pos: usize) -> Result<Node, TemplateError> {
        let name = match self.toks.get(1) {
            Some((Tok::Str(s), _)) => s.clone(),
            _ => return Err(self.err_at(pos, "unexpected token in block clause")),
        };
        self.tpos = 2;
        let pipe =
            if self.tpos < self.toks.len() { Some(self.pipeline("block", false)?) } else { None };
        let saved_vars = std::mem::replace(&mut self.vars, vec![Rc::from("$")]);
        let (list, end) = self.list(false)?;
        self.vars = saved_vars;
        match end {
            Some((k, _)) if k == "end" => {}
            _ => return Err(self.err_at(pos, "unexpected EOF in block")),
        }
        let tree = Rc::new(Tree {
            parse_name: self.name.clone(),
            source: self.source.clone(),
            root: list,
        });
        self.defines.insert(name.to_string(), tree);
        Ok(Node::Template { pos, name, pipe })
    }

    // ---- pipelines -------------------------------------------------------

    fn peek(&self) -> Option<&(Tok, usize)> {
        self.toks.get(self.tpos)
    }

    /// The next token is a field directly attached to the previous one.
    fn peek_chained_field(&self) -> Option<Rc<str>> {
        match self.toks.get(self.tpos) {
            Some((Tok::Field(f), _)) if self.adj.get(self.tpos).copied().unwrap_or(false) => {
                Some(f.clone())
            }
            _ => None,
        }
    }

    fn pipeline(&mut self, ctx: &str, allow_decl: bool) -> Result<Pipe, TemplateError> {
        let pos = self.peek().map(|t| t.1).unwrap_or(self.pos);
        let mut decl = Vec::new();
        let mut is_assign = false;
        // variable declarations: $x := / $x, $y := / $x =
        if allow_decl || ctx == "command" {
            let save = self.tpos;
            if let Some((Tok::Var(v), _)) = self.peek().cloned() {
                self.tpos += 1;
                match self.peek().cloned() {
                    Some((Tok::Declare, _)) => {
                        self.tpos += 1;
                        decl.push(v);
                    }
                    Some((Tok::Assign, _)) => {
                        self.tpos += 1;
                        is_assign = true;
                        decl.push(v);
                    }
                    Some((Tok::Comma, _)) if ctx == "range" => {
                        self.tpos += 1;
                        if let Some((Tok::Var(v2), _)) = self.peek().cloned() {
                            self.tpos += 1;
                            match self.peek().cloned() {
                                Some((Tok::Declare, _)) => {
                                    self.tpos += 1;
                                    decl.push(v);
                                    decl.push(v2);
                                }
                                Some((Tok::Assign, _)) => {
                                    self.tpos += 1;
                                    is_assign = true;
                                    decl.push(v);
                                    decl.push(v2);
                                }
                                _ => return Err(self.err_at(pos, "missing := in range")),
                            }
                        } else {
                            return Err(self.err_at(pos, "too many declarations in range"));
                        }
                    }
                    _ => self.tpos = save,
                }
            }
        }
        let mut cmds = Vec::new();
        loop {
            let Some((t, p)) = self.peek().cloned() else {
                break;
            };
            match t {
                Tok::RParen => break,
                Tok::Pipe => {
                    if cmds.is_empty() {
                        return Err(self.err_at(p, "missing command"));
                    }
                    self.tpos += 1;
                    continue;
                }
                _ => {
                    let c = self.command()?;
                    cmds.push(c);
                    match self.peek() {
                        Some((Tok::Pipe, _)) => {}
                        Some((Tok::RParen, _)) | None => break,
                        Some((t, p)) => {
                            return Err(self.err_at(*p, &format!("unexpected {t:?} in operand")));
                        }
                    }
                }
            }
        }
        if cmds.is_empty() {
            return Err(self.err_at(pos, &format!("missing value for {ctx}")));
        }
        if is_assign {
            for v in &decl {
                if !self.vars.iter().any(|x| x == v) {
                    return Err(self.err_at(pos, &format!("undefined variable \"{v}\"")));
                }
            }
        } else {
            for v in &decl {
                self.vars.push(v.clone());
            }
        }
        Ok(Pipe { pos, decl, is_assign, cmds })
    }

    fn command(&mut self) -> Result<Cmd, TemplateError> {
        let start = self.peek().map(|t| t.1).unwrap_or(0);
        let mut args = Vec::new();
        let mut end_pos = start;
        loop {
            let Some((t, p)) = self.peek().cloned() else {
                break;
            };
            match t {
                Tok::Pipe | Tok::RParen => break,
                _ => {
                    let a = self.operand()?;
                    args.push(a);
                    end_pos = self.peek().map(|x| x.1).unwrap_or(self.action_end);
                    let _ = p;
                }
            }
        }
        let text = self.src.get(start..end_pos).unwrap_or("").trim_end();
        let text = text.trim_end_matches("}}").trim_end_matches('-').trim_end();
        Ok(Cmd { pos: start, args, text: Rc::from(text) })
    }

    fn operand(&mut self) -> Result<Arg, TemplateError> {
        let (t, p) = self.peek().cloned().expect("operand");
        self.tpos += 1;
        let base = match t {
            Tok::Dot => Arg::Dot,
            Tok::Nil => Arg::Nil,
            Tok::Bool(b) => Arg::Const(Value::Bool(b)),
            Tok::Num(n) => Arg::Const(n),
            Tok::Str(s) => Arg::Const(Value::Str(s)),
            Tok::Field(f) => {
                let mut fields = vec![f];
                // Go positions a field chain at its second field.
                let mut pos = p;
                while let Some(f2) = self.peek_chained_field() {
                    if fields.len() == 1 {
                        pos = self.toks[self.tpos].1;
                    }
                    self.tpos += 1;
                    fields.push(f2);
                }
                return Ok(Arg::Field(pos, fields));
            }
            Tok::Var(v) => {
                if !self.vars.contains(&v) {
                    return Err(self.err_at(p, &format!("undefined variable \"{v}\"")));
                }
                let mut fields = Vec::new();
                let mut pos = p;
                while let Some(f2) = self.peek_chained_field() {
                    if fields.is_empty() {
                        pos = self.toks[self.tpos].1;
                    }
                    self.tpos += 1;
                    fields.push(f2);
                }
                return Ok(Arg::Variable(pos, v, fields));
            }
            Tok::Ident(name) => match funcs::lookup(&name) {
                Some(f) => Arg::Func(p, name, f),
                None if (self.extra_funcs)(&name) => {
                    Arg::Func(p, name.clone(), funcs::lookup("include").expect("include"))
                }
                None => return Err(self.err_at(p, &format!("function \"{name}\" not defined"))),
            },
            Tok::LParen => {
                let pipe = self.pipeline("parenthesized pipeline", false)?;
                match self.peek() {
                    Some((Tok::RParen, _)) => self.tpos += 1,
                    _ => return Err(self.err_at(p, "unclosed left paren")),
                }
                Arg::Pipe(Box::new(pipe))
            }
            other => return Err(self.err_at(p, &format!("unexpected {other:?} in operand"))),
        };
        // field chain after a term: (x).Field, "str".Field is an error at exec
        let mut fields = Vec::new();
        while let Some(f2) = self.peek_chained_field() {
            self.tpos += 1;
            fields.push(f2);
        }
        if fields.is_empty() { Ok(base) } else { Ok(Arg::Chain(Box::new(base), fields)) }
    }

    // ---- lexer -----------------------------------------------------------

    /// Lexes one action starting at `start` (after `{{` and trim marker);
    /// leaves `self.pos` after the closing delimiter.
    fn lex_action(&mut self, start: usize) -> Result<(), TemplateError> {
        self.toks.clear();
        self.adj.clear();
        self.tpos = 0;
        let b = self.src.as_bytes();
        let mut i = start;
        let mut paren = 0i32;
        let mut last_end = usize::MAX;
        loop {
            if self.toks.len() > self.adj.len() {
                let p = self.toks[self.toks.len() - 1].1;
                self.adj.push(p == last_end);
                last_end = i;
                self.action_end = i;
            }
            if i >= b.len() {
                return Err(self.err_at(start, "unclosed action"));
            }
            let c = b[i];
            // right delimiter with trim
            if is_space(c) {
                if b[i..].starts_with(b" -}}")
                    || (is_space(c) && b.get(i + 1) == Some(&b'-') && b[i + 2..].starts_with(b"}}"))
                {
                    self.trim_next = true;
                    self.pos = i + 4;
                    break;
                }
                i += 1;
                continue;
            }
            if b[i..].starts_with(b"}}") {
                self.pos = i + 2;
                break;
            }
            let tp = i;
            match c {
                b'|' => {
                    self.toks.push((Tok::Pipe, tp));
                    i += 1;
                }
                b'(' => {
                    paren += 1;
                    self.toks.push((Tok::LParen, tp));
                    i += 1;
                }
                b')' => {
                    paren -= 1;
                    if paren < 0 {
                        return Err(self.err_at(tp, "unexpected right paren"));
                    }
                    self.toks.push((Tok::RParen, tp));
                    i += 1;
                }
                b',' => {
                    self.toks.push((Tok::Comma, tp));
                    i += 1;
                }
                b':' => {
                    if b.get(i + 1) == Some(&b'=') {
                        self.toks.push((Tok::Declare, tp));
                        i += 2;
                    } else {
                        return Err(self.err_at(tp, "expected :="));
                    }
                }
                b'=' => {
                    self.toks.push((Tok::Assign, tp));
                    i += 1;
                }
                b'"' => {
                    let mut j = i + 1;
                    loop {
                        match b.get(j) {
                            None | Some(b'\n') => {
                                return Err(self.err_at(tp, "unterminated quoted string"));
                            }
                            Some(b'\\') => j += 2,
                            Some(b'"') => break,
                            _ => j += 1,
                        }
                    }
                    let s = unquote(&self.src[i + 1..j]).map_err(|e| self.err_at(tp, &e))?;
                    self.toks.push((Tok::Str(Rc::from(s)), tp));
                    i = j + 1;
                }
                b'`' => {
                    let Some(end) = self.src[i + 1..].find('`') else {
                        return Err(self.err_at(tp, "unterminated raw quoted string"));
                    };
                    let s = &self.src[i + 1..i + 1 + end];
                    self.toks.push((Tok::Str(Rc::from(s)), tp));
                    i = i + 2 + end;
                }
                b'\'' => {
                    let mut j = i + 1;
                    loop {
                        match b.get(j) {
                            None | Some(b'\n') => {
                                return Err(self.err_at(tp, "unterminated character constant"));
                            }
                            Some(b'\\') => j += 2,
                            Some(b'\'') => break,
                            _ => j += 1,
                        }
                    }
                    let s = unquote(&self.src[i + 1..j]).map_err(|e| self.err_at(tp, &e))?;
                    let ch = s.chars().next().unwrap_or('\0');
                    self.toks.push((Tok::Num(Value::Int(ch as i64)), tp));
                    i = j + 1;
                }
                b'$' => {
                    let mut j = i + 1;
                    while j < b.len()
                        && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] >= 0x80)
                    {
                        j += 1;
                    }
                    self.toks.push((Tok::Var(Rc::from(&self.src[i..j])), tp));
                    i = j;
                }
                b'.' => {
                    // field, dot, or number like .5
                    if b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                        let (v, j) = self.lex_number(i)?;
                        self.toks.push((Tok::Num(v), tp));
                        i = j;
                    } else {
                        let mut j = i + 1;
                        while j < b.len()
                            && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] >= 0x80)
                        {
                            j += 1;
                        }
                        if j == i + 1 {
                            self.toks.push((Tok::Dot, tp));
                        } else {
                            self.toks.push((Tok::Field(Rc::from(&self.src[i + 1..j])), tp));
                        }
                        i = j;
                    }
                }
                b'+' | b'-' | b'0'..=b'9' => {
                    let (v, j) = self.lex_number(i)?;
                    self.toks.push((Tok::Num(v), tp));
                    i = j;
                }
                _ if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                    let mut j = i;
                    while j < b.len()
                        && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] >= 0x80)
                    {
                        j += 1;
                    }
                    let word = &self.src[i..j];
                    let tok = match word {
                        "if" => Tok::If,
                        "else" => Tok::Else,
                        "end" => Tok::End,
                        "range" => Tok::Range,
                        "with" => Tok::With,
                        "define" => Tok::Define,
                        "template" => Tok::Template,
                        "block" => Tok::Block,
                        "break" => Tok::Break,
                        "continue" => Tok::Continue,
                        "true" => Tok::Bool(true),
                        "false" => Tok::Bool(false),
                        "nil" => Tok::Nil,
                        _ => Tok::Ident(Rc::from(word)),
                    };
                    self.toks.push((tok, tp));
                    i = j;
                }
                _ => {
                    let ch = self.src[i..].chars().next().unwrap_or('?');
                    return Err(self.err_at(tp, &format!("unexpected {ch:?} in command")));
                }
            }
        }
        if self.toks.len() > self.adj.len() {
            let p = self.toks[self.toks.len() - 1].1;
            self.adj.push(p == last_end);
        }
        if paren > 0 {
            return Err(self.err_at(start, "unclosed left paren"));
        }
        Ok(())
    }

    fn lex_number(&self, start: usize) -> Result<(Value, usize), TemplateError> {
        let b = self.src.as_bytes();
        let mut j = start;
        if b[j] == b'+' || b[j] == b'-' {
            j += 1;
        }
        while j < b.len()
            && (b[j].is_ascii_alphanumeric()
                || b[j] == b'.'
                || b[j] == b'_'
                || ((b[j] == b'+' || b[j] == b'-')
                    && matches!(b[j - 1], b'e' | b'E' | b'p' | b'P')))
        {
            j += 1;
        }
        let text = &self.src[start..j];
        let clean = text.replace('_', "");
        let is_hex = clean.trim_start_matches(['+', '-']).starts_with("0x")
            || clean.trim_start_matches(['+', '-']).starts_with("0X");
        if !is_hex && clean.contains(['.', 'e', 'E']) {
            return clean
                .parse::<f64>()
                .map(|f| (Value::Float(f), j))
                .map_err(|_| self.err_at(start, &format!("bad number syntax: \"{text}\"")));
        }
        let digits = clean.strip_prefix('+').unwrap_or(&clean);
        match crate::yaml::go_parse_int(digits) {
            Some(i) => Ok((Value::Int(i), j)),
            None => Err(self.err_at(start, &format!("bad number syntax: \"{text}\""))),
        }
    }
}

/// Go's strconv.Unquote body (without the quotes).
pub(crate) fn unquote(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = it.next() else {
            return Err("invalid syntax".into());
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = (0..n).filter_map(|_| it.next()).collect();
                let v = u32::from_str_radix(&hex, 16).map_err(|_| "invalid syntax".to_string())?;
                out.push(char::from_u32(v).ok_or("invalid syntax")?);
            }
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    let d = it.next().and_then(|c| c.to_digit(8)).ok_or("invalid syntax")?;
                    v = v * 8 + d;
                }
                out.push(char::from_u32(v).ok_or("invalid syntax")?);
            }
            _ => return Err("invalid syntax".into()),
        }
    }
    Ok(out)
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}
