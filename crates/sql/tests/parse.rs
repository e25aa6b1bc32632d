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
