-- psql against Overtake: create, load, query, and report; any failed check is an error
-- (a division by zero), which ON_ERROR_STOP turns into a non-zero exit.
\set ON_ERROR_STOP on
DROP TABLE IF EXISTS ci_orders, ci_customers;
CREATE TABLE ci_customers (id int PRIMARY KEY, name text NOT NULL, city text);
CREATE TABLE ci_orders (id bigint PRIMARY KEY, customer int NOT NULL, amount numeric(10,2) NOT NULL, placed timestamp);
INSERT INTO ci_customers VALUES (1, 'ann', 'oslo'), (2, 'ben', 'rome'), (3, 'cas', NULL);
COPY ci_orders FROM STDIN;
10	1	5.00	2026-01-01 10:00:00
11	1	7.50	\N
12	2	100.00	2026-01-03 12:30:00
13	3	1.25	\N
\.
SET priority = 'high';
SHOW priority;
BEGIN;
SET LOCAL priority = urgent;
UPDATE ci_orders SET amount = amount + 1 WHERE id = 13;
SHOW priority;
COMMIT;
SHOW priority;
-- The report.
SELECT c.name, count(*) AS orders, sum(o.amount) AS total
  FROM ci_customers c JOIN ci_orders o ON o.customer = c.id
 GROUP BY c.name ORDER BY total DESC;
EXPLAIN SELECT * FROM ci_orders WHERE id = 12;
-- Checks.
SELECT CASE WHEN sum(amount) = 114.75 THEN 'ok: sum' ELSE (1 / (count(*) - count(*)))::text END FROM ci_orders;
SELECT CASE WHEN count(*) = 2 THEN 'ok: NULLs' ELSE (1 / (count(*) - count(*)))::text END FROM ci_orders WHERE placed IS NULL;
