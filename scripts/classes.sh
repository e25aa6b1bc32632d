# Sourced by the scripts that compare Overtake with PostgreSQL over the wire: where each
# priority level's transactions spent their time during a run, from Overtake's
# overtake_stat_classes view.
#
#   classes PORT DB                       the view now, as CSV (priority first)
#   class_lines PORT DB CONFIG BEFORE     a `class` line per level whose transactions ended
#                                         since BEFORE (a file `classes` wrote), with the
#                                         view's counts and times less BEFORE's:
#       class,CONFIG,priority,committed,rolled_back,preemptions,queued_us,running_us,
#       preempted_us,client_wait_us,lock_wait_us,log_wait_us,other_wait_us
classes() {
    psql -h 127.0.0.1 -p "$1" -U postgres -X -At -F, -c "select priority, committed,
        rolled_back, preemptions, queued_us, running_us, preempted_us, client_wait_us,
        lock_wait_us, log_wait_us, other_wait_us from overtake_stat_classes" "$2"
}
class_lines() {
    classes "$1" "$2" | awk -F, -v c="$3" '
        NR == FNR { for (i = 2; i <= NF; i++) before[$1, i] = $i; next }
        {
            n = $2 - before[$1, 2] + $3 - before[$1, 3]
            if (n <= 0) next
            printf "class,%s,%s", c, $1
            # The view only grows: a difference below zero is a float rounded.
            for (i = 2; i <= NF; i++) {
                v = $i - before[$1, i]
                printf (i <= 4 ? ",%d" : ",%.1f"), (v < 0 ? 0 : v)
            }
            print ""
        }' "$4" -
}
