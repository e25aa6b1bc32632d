// pgjdbc, unchanged, against a server: prepared statements (and the server-side ones pgjdbc
// switches to after five runs), batches, generated keys, savepoints, types both ways, and
// DatabaseMetaData's tables and columns as tools read them (its keys and indexes are not
// offered yet: README, limitations). Run it with the driver on the class path:
// java -cp postgresql.jar JdbcCheck.java URL
// Each step says what it checks; the first failure exits non-zero.

import java.math.BigDecimal;
import java.sql.*;
import java.time.LocalDate;
import java.util.*;

public class JdbcCheck {
    static void expect(String what, Object got, Object want) {
        if (!Objects.equals(got, want)) {
            System.err.println("FAIL: " + what + ": got " + got + ", want " + want);
            System.exit(1);
        }
        System.out.println("ok: " + what);
    }

    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0])) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jdbc_line, jdbc_order");
                s.execute("CREATE TABLE jdbc_order (id serial PRIMARY KEY, customer varchar(40) NOT NULL,"
                        + " placed date, total numeric(10,2), paid boolean DEFAULT false)");
                s.execute("CREATE TABLE jdbc_line (order_id int REFERENCES jdbc_order (id), n int,"
                        + " item text, PRIMARY KEY (order_id, n))");
                s.execute("CREATE INDEX jdbc_order_customer ON jdbc_order (customer)");
            }

            // Generated keys from an INSERT pgjdbc rewrites with RETURNING.
            long first;
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO jdbc_order (customer, placed, total) VALUES (?, ?, ?)",
                    Statement.RETURN_GENERATED_KEYS)) {
                p.setString(1, "ada");
                p.setDate(2, java.sql.Date.valueOf(LocalDate.of(2026, 12, 2)));
                p.setBigDecimal(3, new BigDecimal("12.50"));
                expect("an INSERT counts its row", p.executeUpdate(), 1);
                try (ResultSet keys = p.getGeneratedKeys()) {
                    keys.next();
                    first = keys.getLong("id");
                }
            }
            expect("getGeneratedKeys gives the serial", first, 1L);

            // A batch, run as one round trip of many executions.
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO jdbc_line (order_id, n, item) VALUES (?, ?, ?)")) {
                for (int n = 1; n <= 20; n++) {
                    p.setLong(1, first);
                    p.setInt(2, n);
                    p.setString(3, "item " + n);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                expect("a batch of 20 inserts", Arrays.stream(counts).sum(), 20);
            }

            // The same statement run past prepareThreshold: a named server-side statement.
            try (PreparedStatement p = c.prepareStatement(
                    "SELECT item FROM jdbc_line WHERE order_id = ? AND n = ?")) {
                for (int n = 1; n <= 10; n++) {
                    p.setLong(1, first);
                    p.setInt(2, n);
                    try (ResultSet r = p.executeQuery()) {
                        r.next();
                        if (!r.getString(1).equals("item " + n)) {
                            expect("prepared lookup " + n, r.getString(1), "item " + n);
                        }
                    }
                }
                System.out.println("ok: a statement run 10 times (server-side prepared after 5)");
            }

            // Types read back as written.
            try (PreparedStatement p = c.prepareStatement(
                    "SELECT customer, placed, total, paid FROM jdbc_order WHERE id = ?")) {
                p.setLong(1, first);
                try (ResultSet r = p.executeQuery()) {
                    r.next();
                    expect("varchar", r.getString(1), "ada");
                    expect("date", r.getDate(2).toLocalDate(), LocalDate.of(2026, 12, 2));
                    expect("numeric", r.getBigDecimal(3), new BigDecimal("12.50"));
                    expect("boolean default", r.getBoolean(4), false);
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT n FROM jdbc_line WHERE n = ANY (?) ORDER BY n")) {
                p.setArray(1, c.createArrayOf("int4", new Integer[] {3, 5, 99}));
                List<Integer> got = new ArrayList<>();
                try (ResultSet r = p.executeQuery()) {
                    while (r.next()) got.add(r.getInt(1));
                }
                expect("= ANY (array parameter)", got, List.of(3, 5));
            }

            // A transaction with a savepoint rolled back to.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("UPDATE jdbc_order SET paid = true WHERE id = " + first);
                Savepoint sp = c.setSavepoint();
                s.executeUpdate("DELETE FROM jdbc_line WHERE order_id = " + first);
                c.rollback(sp);
                try {
                    s.executeUpdate("INSERT INTO jdbc_line VALUES (999, 1, 'no such order')");
                    expect("a foreign key violation", "none", "23503");
                } catch (SQLException e) {
                    expect("a foreign key violation's SQLSTATE", e.getSQLState(), "23503");
                }
                c.rollback();
                s.executeUpdate("UPDATE jdbc_order SET paid = true WHERE id = " + first);
                Savepoint sp2 = c.setSavepoint("before_delete");
                s.executeUpdate("DELETE FROM jdbc_line WHERE n > 10");
                c.releaseSavepoint(sp2);
                c.commit();
            }
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(
                    "SELECT (SELECT paid FROM jdbc_order), (SELECT count(*) FROM jdbc_line)")) {
                r.next();
                expect("the committed update", r.getBoolean(1), true);
                expect("rows kept after a released savepoint", r.getLong(2), 10L);
            }

            // DatabaseMetaData, as IDEs and ORMs read it.
            DatabaseMetaData md = c.getMetaData();
            List<String> tables = new ArrayList<>();
            try (ResultSet r = md.getTables(null, "public", "jdbc_%", new String[] {"TABLE"})) {
                while (r.next()) tables.add(r.getString("TABLE_NAME"));
            }
            Collections.sort(tables);
            expect("getTables", tables, List.of("jdbc_line", "jdbc_order"));
            List<String> columns = new ArrayList<>();
            try (ResultSet r = md.getColumns(null, "public", "jdbc_order", "%")) {
                while (r.next()) {
                    columns.add(r.getString("COLUMN_NAME") + ":" + r.getString("TYPE_NAME") + ":"
                            + r.getInt("ORDINAL_POSITION") + ":" + r.getString("IS_NULLABLE") + ":"
                            + r.getString("IS_AUTOINCREMENT"));
                }
            }
            expect("getColumns", columns, List.of("id:serial:1:NO:YES", "customer:varchar:2:NO:NO",
                    "placed:date:3:YES:NO", "total:numeric:4:YES:NO", "paid:bool:5:YES:NO"));
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE jdbc_line, jdbc_order");
            }
        }
        System.out.println("pgjdbc: all checks passed");
    }
}
