//! A `tracing` layer that keeps every span tandem opens — name, parent, fields — so a test can read the
//! tree one call made, and an operator's tool (the `dumps` example) can print the spans open at a moment.
//!
//! Install it once per process ([`Collector::install`]); a test runs its work inside a root span of its
//! own ([`Collector::case`]) and reads the tree under it ([`Collector::tree`]), so tests running at once
//! do not see each other's spans.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, field};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// One span as seen.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Its name (`statement`, `transaction`, `batch.chunk`, …).
    pub name: &'static str,
    /// The nearest ancestor this layer kept (tandem's spans and the test roots), by sequence number.
    pub parent: Option<u64>,
    /// Its fields as recorded so far, values as text.
    pub fields: BTreeMap<String, String>,
    /// Whether it has closed.
    pub closed: bool,
    /// The thread that opened it: its name and id (see [`this_thread`]).
    pub thread: String,
}

/// A span tree: a span and its children.
#[derive(Clone, Debug)]
pub struct Node {
    /// The span.
    pub span: Seen,
    /// Its children, in the order they opened.
    pub children: Vec<Node>,
}

impl Node {
    /// Every span in the tree, depth first (this one first).
    pub fn walk(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }

    /// The tree with the spans `drop` names removed (their children move up to their parent).
    pub fn without(&self, drop: &[&str]) -> Node {
        let mut children = Vec::new();
        for c in &self.children {
            let c = c.without(drop);
            if drop.contains(&c.span.name) {
                children.extend(c.children);
            } else {
                children.push(c);
            }
        }
        Node {
            span: self.span.clone(),
            children,
        }
    }

    /// A text form that two runs of the same work share whatever the executor: each span as its name and
    /// fields (values of `volatile` fields replaced by `*`, so only their presence counts), children
    /// sorted, so that concurrent partitions may interleave freely. One line per span, indented by depth.
    pub fn canonical(&self, volatile: &[&str]) -> String {
        let fields: Vec<String> = self
            .span
            .fields
            .iter()
            .map(|(k, v)| match volatile.contains(&k.as_str()) {
                true => format!("{k}=*"),
                false => format!("{k}={v}"),
            })
            .collect();
        let mut children: Vec<String> = self
            .children
            .iter()
            .map(|c| c.canonical(volatile))
            .collect();
        children.sort();
        let mut out = format!("{} {{{}}}\n", self.span.name, fields.join(", "));
        for c in children {
            for line in c.lines() {
                out.push_str("  ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

#[derive(Default)]
struct State {
    next: u64,
    spans: HashMap<u64, Seen>,
}

/// The layer and what it saw. Clones share what was seen.
#[derive(Clone, Default)]
pub struct Collector {
    state: Arc<Mutex<State>>,
}

/// The sequence number a kept span carries in the registry.
struct Seq(u64);

struct FieldText<'a>(&'a mut BTreeMap<String, String>);

impl field::Visit for FieldText<'_> {
    fn record_debug(&mut self, field: &field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Collector {
    /// Whether a span is kept: tandem's own and the test's roots (not the drivers').
    fn keeps(meta: &tracing::Metadata<'_>) -> bool {
        meta.target().starts_with("tandem") || meta.name() == "case"
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Installs a collector as the process's subscriber, every level on; the same one for every later call.
    pub fn install() -> Collector {
        static ONE: std::sync::OnceLock<Collector> = std::sync::OnceLock::new();
        ONE.get_or_init(|| {
            use tracing_subscriber::layer::SubscriberExt;
            let c = Collector::default();
            let subscriber = tracing_subscriber::registry().with(c.clone());
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other subscriber is installed in this process");
            c
        })
        .clone()
    }

    /// A root span for one test's work, named `case`: run the work inside it, then read
    /// [`Collector::tree`] of it.
    pub fn case(&self, name: &str) -> tracing::Span {
        tracing::info_span!("case", name)
    }

    /// The tree under a span made by [`Collector::case`] (after its work is done).
    pub fn tree(&self, root: &tracing::Span) -> Node {
        let want = root.id().expect("the case span is enabled");
        let state = self.lock();
        let root_seq = state
            .spans
            .iter()
            .filter(|(_, s)| s.name == "case")
            .map(|(seq, _)| *seq)
            .find(|seq| self.ids_match(*seq, &want))
            .expect("the case span was seen");
        build(&state, root_seq)
    }

    fn ids_match(&self, seq: u64, id: &Id) -> bool {
        let map = IDS.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&id.into_u64()) == Some(&seq)
    }

    /// The spans open now (not closed), as trees from their outermost open span: what was under way at
    /// this moment.
    pub fn open_now(&self) -> Vec<Node> {
        let state = self.lock();
        let mut roots: Vec<u64> = state
            .spans
            .iter()
            .filter(|(_, s)| !s.closed)
            .filter(|(_, s)| {
                s.parent
                    .is_none_or(|p| state.spans.get(&p).is_none_or(|p| p.closed))
            })
            .map(|(seq, _)| *seq)
            .collect();
        roots.sort();
        roots
            .into_iter()
            .map(|r| {
                let mut n = build(&state, r);
                prune_closed(&mut n);
                n
            })
            .collect()
    }
}

/// The current thread as [`Seen::thread`] names it: `name#id`.
pub fn this_thread() -> String {
    let t = std::thread::current();
    let id = format!("{:?}", t.id());
    let id = id.trim_start_matches("ThreadId(").trim_end_matches(')');
    format!("{}#{id}", t.name().unwrap_or("thread"))
}

/// The registry's current ids of kept spans, to find a case's sequence number.
static IDS: Mutex<BTreeMap<u64, u64>> = Mutex::new(BTreeMap::new());

fn prune_closed(n: &mut Node) {
    n.children.retain(|c| !c.span.closed);
    for c in &mut n.children {
        prune_closed(c);
    }
}

fn build(state: &State, seq: u64) -> Node {
    let mut kids: Vec<u64> = state
        .spans
        .iter()
        .filter(|(_, s)| s.parent == Some(seq))
        .map(|(k, _)| *k)
        .collect();
    kids.sort();
    Node {
        span: state.spans[&seq].clone(),
        children: kids.into_iter().map(|k| build(state, k)).collect(),
    }
}

impl<S> Layer<S> for Collector
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !Self::keeps(attrs.metadata()) {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        // The nearest ancestor this layer kept.
        let parent = span
            .scope()
            .skip(1)
            .find_map(|a| a.extensions().get::<Seq>().map(|s| s.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut FieldText(&mut fields));
        let mut state = self.lock();
        state.next += 1;
        let seq = state.next;
        state.spans.insert(
            seq,
            Seen {
                name: attrs.metadata().name(),
                parent,
                fields,
                closed: false,
                thread: this_thread(),
            },
        );
        drop(state);
        span.extensions_mut().insert(Seq(seq));
        IDS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.into_u64(), seq);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let Some(seq) = span.extensions().get::<Seq>().map(|s| s.0) else {
            return;
        };
        let mut state = self.lock();
        if let Some(seen) = state.spans.get_mut(&seq) {
            values.record(&mut FieldText(&mut seen.fields));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(seq) = span.extensions().get::<Seq>().map(|s| s.0) else {
            return;
        };
        if let Some(seen) = self.lock().spans.get_mut(&seq) {
            seen.closed = true;
        }
        let mut ids = IDS.lock().unwrap_or_else(|p| p.into_inner());
        if ids.get(&id.into_u64()) == Some(&seq) {
            ids.remove(&id.into_u64());
        }
    }
}
