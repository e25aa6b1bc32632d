use overtake_sql::statement::parse;

#[test]
fn copy_options_take_postgresql_values() {
    assert_eq!(
        parse("copy c from stdin with (freeze on)").unwrap().len(),
        1
    );
    assert_eq!(parse("COPY c (a, b) FROM STDIN").unwrap().len(), 1);
    assert!(parse("copy c from stdin with (format csv)").is_err());
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
fn deep_expressions_are_refused_and_long_lists_are_not() {
    use overtake_sql::statement::MAX_OPERATORS;
    let values: Vec<String> = (0..5_000).map(|i| format!("({i}, 'x' || {i})")).collect();
    let many_rows = format!("INSERT INTO t VALUES {}", values.join(", "));
    assert_eq!(parse(&many_rows).unwrap().len(), 1);
    let chain = format!(
        "SELECT 1 WHERE {}",
        vec!["a = 1"; MAX_OPERATORS].join(" AND ")
    );
    assert_eq!(parse(&chain).unwrap_err().code, "54001");
    let nested = format!(
        "SELECT {}1{}",
        "(".repeat(MAX_OPERATORS + 1),
        ")".repeat(MAX_OPERATORS + 1)
    );
    assert_eq!(parse(&nested).unwrap_err().code, "54001");
    let ok = format!(
        "SELECT 1 WHERE {}",
        vec!["a = 1"; MAX_OPERATORS / 4].join(" AND ")
    );
    assert_eq!(parse(&ok).unwrap().len(), 1);
}
