//! Random schemas, rows and statements for the differential test, in the spirit of SQLsmith and
//! SQLancer: expressions are built by type (so most statements are meaningful), with a share of
//! edge values (zero, NULL, the integer limits, empty strings) and operations that must fail the
//! same way on both servers (division by zero, overflow, duplicate keys, NULL in NOT NULL).

use fastrand::Rng;

/// A column's type as the generator knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Int,
    BigInt,
    Text,
    Bool,
    Double,
    Numeric,
}

impl Ty {
    fn sql(self) -> &'static str {
        match self {
            Ty::Int => "int",
            Ty::BigInt => "bigint",
            Ty::Text => "text",
            Ty::Bool => "boolean",
            Ty::Double => "double precision",
            Ty::Numeric => "numeric",
        }
    }

    fn is_number(self) -> bool {
        !matches!(self, Ty::Text | Ty::Bool)
    }
}

pub struct Column {
    pub name: String,
    pub ty: Ty,
    pub nullable: bool,
}

pub struct Table {
    pub name: String,
    /// The first is `k int PRIMARY KEY`.
    pub columns: Vec<Column>,
}

pub struct Schema {
    pub tables: Vec<Table>,
}

const TYPES: [Ty; 6] = [
    Ty::Int,
    Ty::BigInt,
    Ty::Text,
    Ty::Bool,
    Ty::Double,
    Ty::Numeric,
];

impl Schema {
    pub fn random(rng: &mut Rng) -> Schema {
        let tables = (0..3)
            .map(|t| {
                let mut columns = vec![Column {
                    name: "k".into(),
                    ty: Ty::Int,
                    nullable: false,
                }];
                for c in 0..rng.usize(2..5) {
                    columns.push(Column {
                        name: format!("c{c}"),
                        ty: TYPES[rng.usize(..TYPES.len())],
                        nullable: rng.bool(),
                    });
                }
                Table {
                    name: format!("t{t}"),
                    columns,
                }
            })
            .collect();
        Schema { tables }
    }

    /// `CREATE TABLE` statements.
    pub fn ddl(&self) -> Vec<String> {
        self.tables
            .iter()
            .map(|t| {
                let columns: Vec<String> = t
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let mut s = format!("{} {}", c.name, c.ty.sql());
                        if i == 0 {
                            s.push_str(" PRIMARY KEY");
                        } else if !c.nullable {
                            s.push_str(" NOT NULL");
                        }
                        s
                    })
                    .collect();
                format!("CREATE TABLE {} ({})", t.name, columns.join(", "))
            })
            .collect()
    }
}

/// A literal of type `ty` (sometimes NULL, when `null` allows).
fn literal(rng: &mut Rng, ty: Ty, null: bool) -> String {
    if null && rng.u8(..8) == 0 {
        return "NULL".into();
    }
    match ty {
        Ty::Int => [
            "0",
            "1",
            "-1",
            "2",
            "7",
            "-13",
            "100",
            "2147483647",
            "-2147483648",
        ][rng.usize(..9)]
        .into(),
        Ty::BigInt => [
            "0",
            "3",
            "-5",
            "42",
            "9223372036854775807",
            "-9223372036854775808",
        ][rng.usize(..6)]
        .into(),
        Ty::Text => ["''", "'a'", "'b'", "'abc'", "'A b'", "'x%'", "'zz'"][rng.usize(..7)].into(),
        Ty::Bool => ["true", "false"][rng.usize(..2)].into(),
        // Typed: a decimal literal is a numeric (`1e10` too).
        Ty::Double => format!(
            "CAST({} AS double precision)",
            ["0.5", "-1.25", "0", "1e10", "3.0", "-0.001"][rng.usize(..6)]
        ),
        Ty::Numeric => [
            "1.5",
            "-2.125",
            "0",
            "123456.789",
            "0.001",
            "-7",
            "0.123456789012345678901",
            "98765432109876543210.5",
        ][rng.usize(..8)]
        .into(),
    }
}

/// Random rows for `table`: `INSERT` statements of a few rows each.
pub fn inserts(rng: &mut Rng, table: &Table, rows: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut key = 0;
    while key < rows {
        let n = rng.usize(1..6).min(rows - key);
        let values: Vec<String> = (0..n)
            .map(|i| {
                let mut v = vec![(key + i).to_string()];
                for c in &table.columns[1..] {
                    v.push(literal(rng, c.ty, c.nullable));
                }
                format!("({})", v.join(", "))
            })
            .collect();
        out.push(format!(
            "INSERT INTO {} VALUES {}",
            table.name,
            values.join(", ")
        ));
        key += n;
    }
    out
}

/// Builds expressions over the columns of the tables in scope (`alias.column`).
pub struct Exprs<'a> {
    pub scope: Vec<(&'a str, &'a Table)>,
}

impl Exprs<'_> {
    fn column(&self, rng: &mut Rng, ty: Ty) -> Option<String> {
        let candidates: Vec<String> = self
            .scope
            .iter()
            .flat_map(|(alias, t)| {
                t.columns
                    .iter()
                    .filter(move |c| c.ty == ty)
                    .map(move |c| format!("{alias}.{}", c.name))
            })
            .collect();
        (!candidates.is_empty()).then(|| candidates[rng.usize(..candidates.len())].clone())
    }

    /// An expression of type `ty`, at most `depth` deep.
    pub fn expr(&self, rng: &mut Rng, ty: Ty, depth: u32) -> String {
        if depth == 0 || rng.u8(..3) == 0 {
            return match self.column(rng, ty) {
                Some(c) if rng.u8(..3) > 0 => c,
                // A NULL operand typed, as applications write it: how PostgreSQL types an
                // expression of untyped NULLs alone (coalesce(NULL, NULL) is text) differs in
                // places (the README lists it).
                _ => match literal(rng, ty, true) {
                    null if null == "NULL" => format!("CAST(NULL AS {})", ty.sql()),
                    value => value,
                },
            };
        }
        let d = depth - 1;
        match ty {
            Ty::Int | Ty::BigInt | Ty::Double | Ty::Numeric => match rng.u8(..8) {
                0..=3 => {
                    let ops = match ty {
                        Ty::Double => 4,
                        _ => 5,
                    };
                    let op = ["+", "-", "*", "/", "%"][rng.usize(..ops)];
                    format!("({} {op} {})", self.expr(rng, ty, d), self.expr(rng, ty, d))
                }
                // On doubles and numerics, their rounding functions too (on integers these
                // give doubles).
                4 => match ty {
                    Ty::Double | Ty::Numeric => {
                        let f = ["abs", "round", "trunc", "ceil", "floor"][rng.usize(..5)];
                        format!("{f}({})", self.expr(rng, ty, d))
                    }
                    _ => format!("abs({})", self.expr(rng, ty, d)),
                },
                5 => format!("(-{})", self.expr(rng, ty, d)),
                6 => format!(
                    "CASE WHEN {} THEN {} ELSE {} END",
                    self.pred(rng, d),
                    self.expr(rng, ty, d),
                    self.expr(rng, ty, d)
                ),
                _ => format!(
                    "coalesce({}, {})",
                    self.expr(rng, ty, d),
                    self.expr(rng, ty, d)
                ),
            },
            Ty::Text => match rng.u8(..5) {
                0 => format!("({} || {})", self.expr(rng, ty, d), self.expr(rng, ty, d)),
                1 => format!("upper({})", self.expr(rng, ty, d)),
                2 => format!("lower({})", self.expr(rng, ty, d)),
                3 => format!(
                    "coalesce({}, {})",
                    self.expr(rng, ty, d),
                    self.expr(rng, ty, d)
                ),
                _ => format!(
                    "CASE WHEN {} THEN {} ELSE {} END",
                    self.pred(rng, d),
                    self.expr(rng, ty, d),
                    self.expr(rng, ty, d)
                ),
            },
            Ty::Bool => self.pred(rng, d),
        }
    }

    /// A boolean condition at most `depth` deep.
    pub fn pred(&self, rng: &mut Rng, depth: u32) -> String {
        let d = depth.saturating_sub(1);
        let comparable = [Ty::Int, Ty::BigInt, Ty::Text, Ty::Double, Ty::Numeric];
        let ty = comparable[rng.usize(..comparable.len())];
        match rng.u8(..if depth == 0 { 4 } else { 9 }) {
            0 | 1 => {
                let op = ["=", "<>", "<", "<=", ">", ">="][rng.usize(..6)];
                format!("{} {op} {}", self.expr(rng, ty, d), self.expr(rng, ty, d))
            }
            2 => format!(
                "{} IS {}NULL",
                self.expr(rng, ty, d),
                if rng.bool() { "NOT " } else { "" }
            ),
            3 => match self.column(rng, Ty::Bool) {
                Some(c) => c,
                None => literal(rng, Ty::Bool, true),
            },
            4 => format!("({} AND {})", self.pred(rng, d), self.pred(rng, d)),
            5 => format!("({} OR {})", self.pred(rng, d), self.pred(rng, d)),
            6 => format!("NOT ({})", self.pred(rng, d)),
            7 => format!(
                "{} BETWEEN {} AND {}",
                self.expr(rng, ty, d),
                literal(rng, ty, false),
                literal(rng, ty, false)
            ),
            _ => format!(
                "{} IN ({}, {})",
                self.expr(rng, ty, d),
                literal(rng, ty, true),
                literal(rng, ty, false)
            ),
        }
    }
}

/// A random statement over `schema`: mostly queries, some writes.
pub fn statement(rng: &mut Rng, schema: &Schema) -> String {
    let t = &schema.tables[rng.usize(..schema.tables.len())];
    let single = Exprs {
        scope: vec![("a", t)],
    };
    match rng.u8(..20) {
        0..=8 => {
            let n = rng.usize(1..4);
            let items: Vec<String> = (0..n)
                .map(|_| {
                    let ty = TYPES[rng.usize(..TYPES.len())];
                    single.expr(rng, ty, 3)
                })
                .collect();
            format!(
                "SELECT {} FROM {} a WHERE {}",
                items.join(", "),
                t.name,
                single.pred(rng, 3)
            )
        }
        9..=11 => {
            // Not grouped by a numeric or a double, nor their min or max: equal values written
            // differently (0 and 0.000, 0 and -0) are one group, or one minimum, shown as
            // whichever row the scan meets first, and the servers scan in different orders.
            let exact = |c: &&Column| !matches!(c.ty, Ty::Numeric | Ty::Double);
            let keys: Vec<&Column> = t.columns.iter().filter(exact).collect();
            let group = keys[rng.usize(..keys.len())];
            let numeric: Vec<&Column> = t.columns.iter().filter(|c| c.ty.is_number()).collect();
            let c = numeric[rng.usize(..numeric.len())];
            // Nor a sum or an average of doubles: the rounding of each addition depends on the
            // order rows are added (-0.001 + 1e10 - 1e10 is not -0.001), and that order is each
            // server's scan. Sums of numerics are exact in any order.
            let agg = if c.ty == Ty::Double {
                "count"
            } else if c.ty == Ty::Numeric {
                ["count", "sum", "avg"][rng.usize(..3)]
            } else {
                ["count", "min", "max", "sum", "avg"][rng.usize(..5)]
            };
            format!(
                "SELECT a.{g}, count(*), {agg}(a.{c}) FROM {t} a WHERE {p} GROUP BY a.{g}",
                g = group.name,
                c = c.name,
                t = t.name,
                p = single.pred(rng, 2)
            )
        }
        12..=13 => {
            let u = &schema.tables[rng.usize(..schema.tables.len())];
            let joined = Exprs {
                scope: vec![("a", t), ("b", u)],
            };
            format!(
                "SELECT {}, {} FROM {} a JOIN {} b ON a.k = b.k WHERE {}",
                joined.expr(rng, Ty::Int, 2),
                joined.expr(rng, Ty::Text, 2),
                t.name,
                u.name,
                joined.pred(rng, 2)
            )
        }
        14..=16 => {
            let own = Exprs {
                scope: vec![(t.name.as_str(), t)],
            };
            let c = &t.columns[rng.usize(1..t.columns.len())];
            format!(
                "UPDATE {} SET {} = {} WHERE {}",
                t.name,
                c.name,
                own.expr(rng, c.ty, 2),
                own.pred(rng, 2)
            )
        }
        17 => {
            let own = Exprs {
                scope: vec![(t.name.as_str(), t)],
            };
            format!("DELETE FROM {} WHERE {}", t.name, own.pred(rng, 3))
        }
        _ => {
            let rows = inserts(rng, t, 1);
            // A key from the same small range: sometimes new, sometimes taken (23505).
            rows[0].replacen("VALUES (0,", &format!("VALUES ({},", rng.usize(..60)), 1)
        }
    }
}
