use overtake_sql::bind::statement::parse;

#[test]
fn copy_options_take_postgresql_values() {
    assert_eq!(
        parse("copy c from stdin with (freeze on)").unwrap().len(),
        1
    );
    assert_eq!(parse("COPY c (a, b) FROM STDIN").unwrap().len(), 1);
    assert_eq!(
        parse("copy c to stdout with (format csv, header 1)")
            .unwrap()
            .len(),
        1
    );
    assert!(parse("copy c from stdin with (format csv, header maybe)").is_err());
}

#[test]
fn every_vacuum_is_accepted() {
    for s in [
        "VACUUM",
        "vacuum analyze pgbench_branches",
        "VACUUM (ANALYZE) t;",
        "analyze t",
    ] {
        assert_eq!(parse(s).unwrap().len(), 1, "{s}");
    }
}

#[test]
fn long_chains_parse_and_drop_without_recursing_along_them() {
    let values: Vec<String> = (0..5_000).map(|i| format!("({i}, 'x' || {i})")).collect();
    let many_rows = format!("INSERT INTO t VALUES {}", values.join(", "));
    assert_eq!(parse(&many_rows).unwrap().len(), 1);
    // Chains the parser builds without recursing, each a tree as deep as it is long: parsing
    // and dropping them must not recurse along them either (a recursive drop of 200,000 levels
    // overflows this test thread's stack).
    for chain in [
        format!("SELECT 1{}", "::int".repeat(170_000)),
        format!("SELECT 1{}", "+1".repeat(500_000)),
        format!("SELECT 1{}", " IS NULL".repeat(120_000)),
        format!("SELECT 1 WHERE {}", vec!["a=1"; 140_000].join(" OR ")),
    ] {
        assert!(parse(&chain).is_ok_and(|s| s.len() == 1));
    }
}

#[test]
fn nesting_is_bounded_as_postgresql_bounds_it() {
    let parens = |n: usize| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
    // (Never print a result here: formatting a tree that deep recurses along it.)
    assert!(parse(&parens(5_000)).is_ok_and(|s| s.len() == 1));
    let deep = parse(&parens(20_000));
    assert!(
        matches!(&deep, Err(e) if e.code == "54001"),
        "20,000 parentheses were accepted"
    );
}
