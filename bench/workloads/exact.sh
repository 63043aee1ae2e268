# bench/workloads/exact.sh: the programs of the exact-mode benchmarks, for exact-ab.sh,
# exact-heaptrack.sh and exact-model.sh (sourced from the project's root, with `set -e`).
#
#   exact_workload WORKLOAD ROWS DIR   sets cmd: sqlite3 on a script of ROWS rows written to DIR
#                                      (bench/workloads/sqlite-gen.awk), or with WORKLOAD=python
#                                      python3.11 bench/workloads/alloc.py, PYTHONMALLOC=malloc
exact_workload() {
  case $1 in
    sqlite)
      command -v sqlite3 >/dev/null || { echo "needs sqlite3 (apt-get install -y sqlite3)" >&2; exit 1; }
      awk -v rows="$2" -f bench/workloads/sqlite-gen.awk >"$3/w.sql"
      cmd=(sqlite3 :memory: ".read $3/w.sql") ;;
    python)
      [ -x /usr/bin/python3.11 ] || { echo "needs /usr/bin/python3.11" >&2; exit 1; }
      export PYTHONMALLOC=malloc
      cmd=(/usr/bin/python3.11 bench/workloads/alloc.py) ;;
    *) echo "WORKLOAD is sqlite or python" >&2; exit 2 ;;
  esac
}
