//! A SELECT's plan: a tree of nodes, each producing rows for its parent, with the tables read at
//! the leaves. The binder builds it bottom-up — the FROM clause's scans joined left-deep by
//! nested loops, then grouping, projection, DISTINCT, ORDER BY and LIMIT — and `EXPLAIN` prints
//! it as PostgreSQL prints its plans; the executor (`exec::select`) runs it node by node. A new
//! kind of operator (another join, a subquery, a window) is a new node here, one arm in the
//! executor and one in EXPLAIN.
//!
//! A plan never holds rows or a transaction: it is run any number of times (a prepared
//! statement is one plan).

use std::sync::Arc;

use crate::catalog::SqlTable;
use crate::expr::Expr;
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// How a table's rows are found.
#[derive(Clone, Debug)]
pub enum Access {
    /// Every row.
    Scan,
    /// One row by its whole primary key (values in key order).
    Key(Vec<Expr>),
    /// The row whose `ctid` equals the expression (PostgreSQL's TID scan).
    Tid(Expr),
    /// The rows of a list of whole primary keys (`k IN (1, 2)`, `(a, b) IN ((1, 2), (3, 4))`),
    /// each read once however often it is listed.
    Keys(Vec<Vec<Expr>>),
    /// Rows whose leading key columns equal `eq`, and whose next key column lies within the
    /// bounds (`true`: inclusive), in the primary key or (`index`: its position among the
    /// table's indexes) a secondary index.
    Range {
        index: Option<usize>,
        eq: Vec<Expr>,
        lower: Option<(Expr, bool)>,
        upper: Option<(Expr, bool)>,
    },
    /// Every row passing the conditions on the source alone, read once per run into a hash
    /// table on `keys` (each an expression over the source's columns, and the expression over
    /// the row joined before it that it must equal): each joined row then finds its rows there
    /// (a hash join; a NULL key finds nothing). For a source read under many rows with no
    /// index for the join.
    Hash(Vec<(Expr, Expr)>),
}

/// What a FROM item reads.
#[derive(Debug)]
pub enum Relation {
    /// A table's rows, as its access finds them.
    Table(Arc<SqlTable>),
    /// Rows made when the statement was planned (a system catalog, whose name is given).
    Rows {
        relation: String,
        rows: Vec<Vec<Datum>>,
    },
    /// A subquery in FROM (a derived table, or a WITH query every reference shares): its
    /// rows, made once per execution.
    Subquery(Arc<SelectPlan>),
    /// The rows a recursive WITH query's recursive part reads: those its last round made
    /// (number `n` of the statement's recursive queries).
    WorkTable(usize),
    /// A set-returning function in FROM: its values for the arguments, which may read the
    /// sources before it (PostgreSQL's implicit LATERAL).
    /// (`ordinality`: `WITH ORDINALITY`, each value followed by its number from 1.)
    Function {
        func: SetFunc,
        args: Vec<Expr>,
        ordinality: bool,
    },
    /// `pg_settings`: the session's settings as the statement runs (`Context::settings`).
    Settings,
    /// `overtake_stat_classes`: the server's time per priority level as the statement runs
    /// (`Backends::classes`).
    Classes,
}

/// The set operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

/// The set-returning functions: one value per row they make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetFunc {
    /// `unnest(array)`: its elements.
    Unnest,
    /// `generate_series(start, stop [, step])`: numbers, or timestamps stepped by an interval.
    GenerateSeries,
    /// `generate_subscripts(array, 1)`: its subscripts.
    GenerateSubscripts,
    /// `pg_partition_ancestors(regclass)`: a partition and its ancestors; no rows for a
    /// relation that is not a partition (every relation here).
    PartitionAncestors,
    /// `json_array_elements(doc)`, `jsonb_array_elements(doc)` and their `_text` forms: an
    /// array's elements (as written for json, canonical for jsonb; as text, a string's
    /// characters and JSON null as NULL).
    JsonArrayElements { jsonb: bool, text: bool },
    /// `jsonb_object_keys(doc)`: an object's keys, in jsonb's order.
    JsonbObjectKeys,
}

impl SetFunc {
    /// The function called `name`, if it is one.
    pub fn named(name: &str) -> Option<SetFunc> {
        Some(match name {
            "unnest" => SetFunc::Unnest,
            "generate_series" => SetFunc::GenerateSeries,
            "generate_subscripts" => SetFunc::GenerateSubscripts,
            "pg_partition_ancestors" => SetFunc::PartitionAncestors,
            "json_array_elements" => SetFunc::JsonArrayElements {
                jsonb: false,
                text: false,
            },
            "json_array_elements_text" => SetFunc::JsonArrayElements {
                jsonb: false,
                text: true,
            },
            "jsonb_array_elements" => SetFunc::JsonArrayElements {
                jsonb: true,
                text: false,
            },
            "jsonb_array_elements_text" => SetFunc::JsonArrayElements {
                jsonb: true,
                text: true,
            },
            "jsonb_object_keys" => SetFunc::JsonbObjectKeys,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SetFunc::Unnest => "unnest",
            SetFunc::GenerateSeries => "generate_series",
            SetFunc::GenerateSubscripts => "generate_subscripts",
            SetFunc::PartitionAncestors => "pg_partition_ancestors",
            SetFunc::JsonArrayElements { jsonb, text } => match (jsonb, text) {
                (false, false) => "json_array_elements",
                (false, true) => "json_array_elements_text",
                (true, false) => "jsonb_array_elements",
                (true, true) => "jsonb_array_elements_text",
            },
            SetFunc::JsonbObjectKeys => "jsonb_object_keys",
        }
    }
}

/// A relation in a FROM clause: its `width` columns start at `offset` in the joined row.
#[derive(Debug)]
pub struct Source {
    pub relation: Relation,
    pub name: String,
    pub offset: usize,
    pub width: usize,
    pub access: Access,
    /// Joined to the sources before it by a LEFT JOIN (or a FULL JOIN: `right` too).
    pub left: bool,
    /// Joined to the sources before it by a RIGHT or FULL JOIN (a RIGHT JOIN written first
    /// is bound as a LEFT JOIN instead, whose lookups an index serves).
    pub right: Option<RightJoinOn>,
    /// A hash join (`Access::Hash` keys) its key range may give way to during a run: where
    /// each of many lookups reads a large part of the table (an index on a column of few
    /// values), the table is read once into a hash table instead (see `exec::select`).
    pub hash_fallback: Option<Vec<(Expr, Expr)>>,
    /// For a table: which of its columns the statement reads (`None`: all); the others are
    /// left NULL in the rows it passes on (see `plan::columns`).
    pub needed: Option<Box<[bool]>>,
}

impl Source {
    /// Its columns the statement reads (see `needed`), in order.
    pub fn read_columns(&self) -> impl Iterator<Item = usize> + '_ {
        let needed = self.needed.as_deref();
        (0..self.width).filter(move |&c| needed.is_none_or(|n| n.get(c).copied().unwrap_or(true)))
    }

    /// The table it reads, if it reads one.
    pub fn table(&self) -> Option<&Arc<SqlTable>> {
        match &self.relation {
            Relation::Table(t) => Some(t),
            Relation::Rows { .. }
            | Relation::Settings
            | Relation::Classes
            | Relation::Subquery(_)
            | Relation::WorkTable(_)
            | Relation::Function { .. } => None,
        }
    }
}

/// A right or full join's ON conditions, and the equalities among them that hash its inner
/// rows (see `bind::access::hash_keys`: each its inner side's expression and the outer side's;
/// none: each outer row is compared with every inner row).
#[derive(Debug, Default)]
pub struct RightJoinOn {
    pub on: Vec<Expr>,
    pub keys: Vec<(Expr, Expr)>,
}

/// Aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    Avg,
    /// `array_agg(x [ORDER BY ...])`: every value, NULLs included, as an array.
    ArrayAgg,
    /// `string_agg(x, separator [ORDER BY ...])`: the values' text joined (NULLs skipped).
    StringAgg,
    /// `bool_and(x)`, `bool_or(x)` (`every(x)` is `bool_and`).
    BoolAnd,
    BoolOr,
    /// `json_agg(x [ORDER BY ...])`, `jsonb_agg(x ...)`: every value (NULLs as JSON null,
    /// the argument bound as its JSON text) in a JSON array.
    JsonAgg,
    JsonbAgg,
}

/// One aggregate of a query: its argument over the joined row (`None`: `count(*)`).
#[derive(Clone, Debug)]
pub struct AggCall {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    /// `FILTER (WHERE ...)`: only the rows it holds for are aggregated.
    pub filter: Option<Expr>,
    pub ty: SqlType,
    /// `string_agg`'s separator.
    pub separator: Option<Expr>,
    /// `ORDER BY` inside the call: the values are aggregated in this order (expressions over
    /// the input row, descending, NULLs first).
    pub order_by: Vec<(Expr, bool, bool)>,
}

/// Grouping: the aggregated row is the group values followed by the aggregates.
#[derive(Debug)]
pub struct Aggregate {
    pub group_by: Vec<Expr>,
    pub calls: Vec<AggCall>,
    pub having: Option<Expr>,
}

/// A sort key: a column of the projected row.
#[derive(Clone, Copy, Debug)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// What a locking read does with a row locked by another transaction (PostgreSQL's default,
/// `NOWAIT` and `SKIP LOCKED`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockWait {
    /// Waits for the holder to end.
    #[default]
    Wait,
    /// Fails at once with 55P03.
    NoWait,
    /// Leaves the row out.
    SkipLocked,
}

/// A node of a SELECT's plan tree. Rows flow from the leaves up; each node's rows are the
/// columns its parent's expressions refer to by position.
#[derive(Debug)]
pub enum PlanNode {
    /// One row without columns, if `filter` holds (a SELECT without FROM).
    Result { filter: Vec<Expr> },
    /// The rows of `source` its access finds given the row joined so far (the outer rows'
    /// columns), each appended to that row and kept if every `filter` holds on the joined row;
    /// with `lock` (`FOR UPDATE`), each locked as a write would lock it and read again.
    Scan {
        source: Box<Source>,
        filter: Vec<Expr>,
        lock: Option<LockWait>,
    },
    /// For each row of `outer`, the rows `inner` finds for it, joined, each kept if every
    /// `filter` holds; a left join (`nulls`: the inner side's width) also keeps an outer row
    /// `inner` finds nothing for, with NULLs for the inner side's columns. (`filter` is where a
    /// left join's WHERE conditions on its inner side go: they apply after the NULLs.)
    ///
    /// A right or full join (`right`: its ON conditions) reads `inner` once, joins each of its
    /// rows to each outer row the conditions hold for, and at the end also keeps each inner row
    /// no outer row matched, with NULLs for the outer side's columns.
    NestedLoop {
        outer: Box<PlanNode>,
        inner: Box<PlanNode>,
        left: Option<usize>,
        right: Option<RightJoinOn>,
        filter: Vec<Expr>,
    },
    /// The rows of `outer` for which `inner` (run under each) finds a row (a semi join: `EXISTS`,
    /// `IN`), or (`anti`) finds none (`NOT EXISTS`, `NOT IN`): the outer row alone comes out.
    SemiJoin {
        outer: Box<PlanNode>,
        inner: Box<PlanNode>,
        anti: bool,
    },
    /// One row per group of the input: the group values followed by the aggregates, kept if
    /// `having` holds (one row over no input when nothing groups).
    Aggregate {
        input: Box<PlanNode>,
        aggregate: Aggregate,
    },
    /// The input rows, each with the values of the window function calls appended (in the
    /// input's order): every row is read before the first comes out.
    Window {
        input: Box<PlanNode>,
        calls: Vec<crate::plan::window::WindowCall>,
    },
    /// The input rows on which every condition holds: conditions holding correlated
    /// subqueries (`Expr::SubPlan`), run under each row, which a scan cannot run.
    Filter {
        input: Box<PlanNode>,
        filter: Vec<Expr>,
    },
    /// `WITH RECURSIVE`: the anchor's rows, then the recursive part's over and over, each
    /// round reading (as work table `id`) the rows the last made, until one makes none; with
    /// UNION (not `all`) a row already made is dropped.
    RecursiveUnion {
        anchor: Box<SelectPlan>,
        recursive: Box<SelectPlan>,
        id: usize,
        all: bool,
        types: Vec<SqlType>,
    },
    /// Rows of expressions (`VALUES`), each value converted to its column's type.
    Values {
        rows: Vec<Vec<Expr>>,
        types: Vec<SqlType>,
    },
    /// `left UNION/INTERSECT/EXCEPT [ALL] right`: the two queries' rows combined, each value
    /// converted to its column's type; without ALL, duplicates removed.
    SetOp {
        left: Box<SelectPlan>,
        right: Box<SelectPlan>,
        op: SetOp,
        all: bool,
        types: Vec<SqlType>,
    },
    /// The expressions' values over each input row, where set-returning functions in the
    /// select list (`SELECT unnest(a), generate_subscripts(a, 1)`) make rows: as many per input
    /// row as the longest makes, the others NULL past their end (PostgreSQL 10's rule); the
    /// expression at each function's position stands in for it.
    ProjectSet {
        input: Box<PlanNode>,
        exprs: Vec<Expr>,
        functions: Vec<(usize, SetFunc, Vec<Expr>)>,
    },
    /// The expressions' values over each input row.
    Project {
        input: Box<PlanNode>,
        exprs: Vec<Expr>,
    },
    /// Rows whose first `columns` values no earlier row had.
    Distinct {
        input: Box<PlanNode>,
        columns: usize,
    },
    /// The first input row of each group of equal values at `keys` (DISTINCT ON).
    DistinctOn {
        input: Box<PlanNode>,
        keys: Vec<usize>,
    },
    /// The input, sorted (stable: equal rows keep their order).
    Sort {
        input: Box<PlanNode>,
        keys: Vec<SortKey>,
    },
    /// The input after skipping `offset` rows, at most `limit` of them (each a count
    /// expression; NULL: no bound).
    Limit {
        input: Box<PlanNode>,
        limit: Option<Expr>,
        offset: Option<Expr>,
    },
}

impl PlanNode {
    /// The tables the tree reads, left to right.
    pub fn sources(&self) -> Vec<&Source> {
        let mut out = Vec::new();
        self.walk(&mut |n| {
            if let PlanNode::Scan { source, .. } = n {
                out.push(&**source);
            }
        });
        out
    }

    /// The scans of the tree, those inside views' queries left out (views' own scans are
    /// in).
    pub fn sources_outside_views(&self) -> Vec<&Source> {
        let mut out = Vec::new();
        self.walk_into(false, &mut |n| {
            if let PlanNode::Scan { source, .. } = n {
                out.push(&**source);
            }
        });
        out
    }

    /// Calls `f` with every expression of the tree (access keys and bounds included), nested
    /// ones too.
    pub fn visit_exprs(&self, f: &mut impl FnMut(&Expr)) {
        let mut each = |e: &Expr| e.visit(f);
        self.walk(&mut |n| match n {
            PlanNode::Result { filter } => filter.iter().for_each(&mut each),
            PlanNode::Scan { source, filter, .. } => {
                match &source.access {
                    Access::Scan => {}
                    Access::Key(es) => es.iter().for_each(&mut each),
                    Access::Tid(e) => each(e),
                    Access::Keys(keys) => keys.iter().flatten().for_each(&mut each),
                    Access::Range {
                        eq, lower, upper, ..
                    } => {
                        eq.iter().for_each(&mut each);
                        lower.iter().chain(upper).for_each(|(e, _)| each(e));
                    }
                    Access::Hash(keys) => keys.iter().for_each(|(k, e)| {
                        each(k);
                        each(e);
                    }),
                }
                if let Relation::Function { args, .. } = &source.relation {
                    args.iter().for_each(&mut each);
                }
                filter.iter().for_each(&mut each);
            }
            PlanNode::NestedLoop { filter, right, .. } => {
                filter.iter().for_each(&mut each);
                if let Some(right) = right {
                    right.on.iter().for_each(&mut each);
                    right.keys.iter().for_each(|(k, e)| {
                        each(k);
                        each(e);
                    });
                }
            }
            PlanNode::Values { rows, .. } => rows.iter().flatten().for_each(&mut each),
            PlanNode::SetOp { .. } | PlanNode::RecursiveUnion { .. } => {}
            PlanNode::Aggregate { aggregate: a, .. } => a
                .group_by
                .iter()
                .chain(a.calls.iter().filter_map(|c| c.arg.as_ref()))
                .chain(a.having.iter())
                .for_each(&mut each),
            PlanNode::Project { exprs, .. } | PlanNode::Filter { filter: exprs, .. } => {
                exprs.iter().for_each(&mut each)
            }
            PlanNode::Window { calls, .. } => {
                calls.iter().flat_map(|c| c.exprs()).for_each(&mut each)
            }
            PlanNode::ProjectSet {
                exprs, functions, ..
            } => exprs
                .iter()
                .chain(functions.iter().flat_map(|(_, _, args)| args))
                .for_each(&mut each),
            PlanNode::Limit { limit, offset, .. } => {
                limit.iter().chain(offset.iter()).for_each(&mut each)
            }
            PlanNode::Distinct { .. }
            | PlanNode::DistinctOn { .. }
            | PlanNode::Sort { .. }
            | PlanNode::SemiJoin { .. } => {}
        });
    }

    /// Calls `f` with this node and every node under it, parents first, outer before inner:
    /// derived tables' and set operations' plans included.
    pub fn visit_nodes<'a>(&'a self, f: &mut impl FnMut(&'a PlanNode)) {
        self.walk(f)
    }

    fn walk<'a>(&'a self, f: &mut impl FnMut(&'a PlanNode)) {
        self.walk_into(true, f)
    }

    /// Calls `f` with every node of the tree (`views`: those of views' queries too).
    fn walk_into<'a>(&'a self, views: bool, f: &mut impl FnMut(&'a PlanNode)) {
        f(self);
        match self {
            PlanNode::Scan { source, .. } => {
                if let Relation::Subquery(plan) = &source.relation
                    && (views || plan.view.is_none())
                {
                    plan.root.walk_into(views, f);
                }
            }
            PlanNode::Result { .. } | PlanNode::Values { .. } => {}
            PlanNode::SetOp { left, right, .. } => {
                left.root.walk_into(views, f);
                right.root.walk_into(views, f);
            }
            PlanNode::RecursiveUnion {
                anchor, recursive, ..
            } => {
                anchor.root.walk_into(views, f);
                recursive.root.walk_into(views, f);
            }
            PlanNode::NestedLoop { outer, inner, .. } | PlanNode::SemiJoin { outer, inner, .. } => {
                outer.walk_into(views, f);
                inner.walk_into(views, f);
            }
            PlanNode::Aggregate { input, .. }
            | PlanNode::Window { input, .. }
            | PlanNode::DistinctOn { input, .. }
            | PlanNode::ProjectSet { input, .. }
            | PlanNode::Filter { input, .. }
            | PlanNode::Project { input, .. }
            | PlanNode::Distinct { input, .. }
            | PlanNode::Sort { input, .. }
            | PlanNode::Limit { input, .. } => input.walk_into(views, f),
        }
    }
}

/// A SELECT: its plan tree, whose rows' first `visible` columns are returned (the others only
/// sort).
#[derive(Debug)]
pub struct SelectPlan {
    pub root: PlanNode,
    pub visible: usize,
    /// `FOR UPDATE`: every scan locks the rows it reads (its `lock`), as writes would lock
    /// them. Kept here too because servers ask at every execution.
    pub for_update: bool,
    /// The statement's uncorrelated subqueries, on its top plan only (see [`InitPlan`]).
    pub init: Vec<InitPlan>,
    /// For a view's query: the view, whose owner's privileges it reads with.
    pub view: Option<Box<ViewRead>>,
}

/// A view read by a statement: the statement's role needs SELECT on the view, and the view's
/// query reads with its owner's privileges (as PostgreSQL's views do).
#[derive(Debug)]
pub struct ViewRead {
    pub view: Arc<SqlTable>,
    /// Its owner, as found when the statement was planned.
    pub owner: crate::catalog::acl::Actor,
}

/// What an uncorrelated subquery in an expression gives: computed once, before the statement's
/// rows are read (PostgreSQL's InitPlan), and read by `Expr::Init` and `Expr::InInit`.
#[derive(Debug)]
pub struct InitPlan {
    pub plan: SelectPlan,
    pub kind: InitKind,
    /// The type of its (first) column.
    pub ty: SqlType,
    /// It names the enclosing query's columns: run for each row, under it (`Expr::SubPlan`),
    /// rather than once before.
    pub correlated: bool,
    /// The enclosing query's columns it reads the row of (a row it runs under may hold more
    /// after them: window functions' values).
    pub outer_width: usize,
    /// In a view's query: the view's owner, whose privileges it reads with.
    pub owner: Option<crate::catalog::acl::Actor>,
}

/// What an [`InitPlan`] computes from its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitKind {
    /// The one value of its one row (NULL for none; 21000 for more than one row).
    Scalar,
    /// Whether it has a row.
    Exists,
    /// The values of its one column (`x IN (SELECT ...)`).
    In,
    /// The values of its one column as an array (`ARRAY(SELECT ...)`).
    Array,
}

/// What the binder found in a SELECT, in the order its clauses apply, to be built into a tree
/// by [`SelectPlan::build`].
pub struct SelectParts {
    pub sources: Vec<Source>,
    /// Conditions checked as soon as the sources up to each level are joined (one level, the
    /// `Result`'s, when there is no source).
    pub filters: Vec<Vec<Expr>>,
    /// Conditions checked on each level's joined rows after a left join's NULLs.
    pub after_join: Vec<Vec<Expr>>,
    pub aggregate: Option<Aggregate>,
    /// Window function calls over the joined (or aggregated) row, whose values follow its
    /// columns in the row the projection reads.
    pub windows: Vec<crate::plan::window::WindowCall>,
    /// Expressions over the joined row (or the aggregated row); the first `visible` are
    /// returned, the others only sort.
    pub projection: Vec<Expr>,
    pub visible: usize,
    pub distinct: bool,
    /// DISTINCT ON: the columns whose values keep only their first row (after the sort).
    pub distinct_on: Vec<usize>,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// `FOR UPDATE` and what it does with a locked row.
    pub lock: Option<LockWait>,
    /// `EXISTS`, `IN` and their negations among the WHERE's conditions, as joins applied after
    /// the sources' (each the subquery's sources, joined under the outer row).
    pub semi_joins: Vec<(PlanNode, bool)>,
    /// WHERE conditions holding correlated subqueries, checked on the joined rows.
    pub post_filter: Vec<Expr>,
    /// Set-returning functions in the select list: their positions in `projection` and calls.
    pub set_functions: Vec<(usize, SetFunc, Vec<Expr>)>,
}

/// Sources joined left-deep, each scan with its level's filters and each join with its
/// conditions after a left join's NULLs; a `Result` (with the one level's filters) when there
/// is no source.
pub fn join_tree(
    sources: Vec<Source>,
    mut filters: Vec<Vec<Expr>>,
    after_join: Vec<Vec<Expr>>,
    lock: Option<LockWait>,
) -> PlanNode {
    let mut node: Option<PlanNode> = None;
    let scans = sources.into_iter().zip(filters.iter_mut()).zip(
        after_join
            .into_iter()
            .chain(std::iter::repeat_with(Vec::new)),
    );
    for ((mut source, filter), after) in scans {
        let filter = std::mem::take(filter);
        let left = source.left.then_some(source.width);
        let right = source.right.take();
        // A locking read locks each row as it finds it, as its scan does.
        if lock.is_some() && matches!(source.access, Access::Hash(_)) {
            source.access = Access::Scan;
        }
        let scan = PlanNode::Scan {
            source: Box::new(source),
            filter,
            lock,
        };
        node = Some(match node {
            None => scan,
            Some(outer) => PlanNode::NestedLoop {
                outer: Box::new(outer),
                inner: Box::new(scan),
                left,
                right,
                filter: after,
            },
        });
    }
    node.unwrap_or_else(|| PlanNode::Result {
        filter: filters.into_iter().next().unwrap_or_default(),
    })
}

impl SelectPlan {
    /// The tree of `parts`: scans joined left-deep, then each clause's node above them.
    pub fn build(parts: SelectParts) -> SelectPlan {
        let SelectParts {
            sources,
            filters,
            after_join,
            aggregate,
            projection,
            visible,
            distinct,
            distinct_on,
            order_by,
            limit,
            offset,
            lock,
            semi_joins,
            post_filter,
            set_functions,
            windows,
        } = parts;
        let mut node = join_tree(sources, filters, after_join, lock);
        for (inner, anti) in semi_joins {
            node = PlanNode::SemiJoin {
                outer: Box::new(node),
                inner: Box::new(inner),
                anti,
            };
        }
        if !post_filter.is_empty() {
            node = PlanNode::Filter {
                input: Box::new(node),
                filter: post_filter,
            };
        }
        if let Some(aggregate) = aggregate {
            node = PlanNode::Aggregate {
                input: Box::new(node),
                aggregate,
            };
        }
        if !windows.is_empty() {
            node = PlanNode::Window {
                input: Box::new(node),
                calls: windows,
            };
        }
        node = if set_functions.is_empty() {
            PlanNode::Project {
                input: Box::new(node),
                exprs: projection,
            }
        } else {
            PlanNode::ProjectSet {
                input: Box::new(node),
                exprs: projection,
                functions: set_functions,
            }
        };
        if distinct {
            node = PlanNode::Distinct {
                input: Box::new(node),
                columns: visible,
            };
        }
        if !order_by.is_empty() && !in_key_order(&node, &order_by) {
            node = PlanNode::Sort {
                input: Box::new(node),
                keys: order_by,
            };
        }
        if !distinct_on.is_empty() {
            node = PlanNode::DistinctOn {
                input: Box::new(node),
                keys: distinct_on,
            };
        }
        if limit.is_some() || offset.is_some() {
            node = PlanNode::Limit {
                input: Box::new(node),
                limit,
                offset,
            };
        }
        SelectPlan {
            root: node,
            visible,
            for_update: lock.is_some(),
            init: Vec::new(),
            view: None,
        }
    }
}

/// Whether `node` (a projection over a table's scan) makes its rows in the order `keys` asks:
/// each key ascending with NULLs last, naming in turn the index columns after those its access
/// pins to one value. Its Sort is then left out, so a LIMIT above stops the read early and a
/// locking read locks only the rows it returns (PostgreSQL's `ORDER BY k LIMIT 1 FOR UPDATE`
/// over an index).
fn in_key_order(node: &PlanNode, keys: &[SortKey]) -> bool {
    let PlanNode::Project { input, exprs } = node else {
        return false;
    };
    let scan = match &**input {
        PlanNode::Filter { input, .. } => &**input,
        other => other,
    };
    let PlanNode::Scan { source, .. } = scan else {
        return false;
    };
    let Relation::Table(table) = &source.relation else {
        return false;
    };
    let (columns, pinned) = match &source.access {
        Access::Range { index, eq, .. } => (
            match index {
                Some(i) => &table.indexes[*i].columns,
                None => &table.primary_key,
            },
            eq.len(),
        ),
        Access::Scan if table.row_ids.is_none() => (&table.primary_key, 0),
        _ => return false,
    };
    let ordered = &columns[pinned.min(columns.len())..];
    keys.len() <= ordered.len()
        && keys.iter().zip(ordered).all(|(k, &c)| {
            !k.descending
                && !k.nulls_first
                && matches!(exprs.get(k.column), Some(Expr::Column(x)) if *x == source.offset + c)
        })
}
