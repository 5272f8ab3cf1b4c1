# Instrument (issue 33): run a command and, every 20 ms until it ends, read the threads of its descendant process
# whose name starts with NAME from /proc; print the last reading: each thread's name, CPU time (user+system ms),
# context switches (voluntary / forced) and allowed CPUs. Which threads share the loop's core, and how busy are they?
# Usage: python3 threads.py NAME COMMAND...
import os, subprocess, sys, time

name, cmd = sys.argv[1], sys.argv[2:]
tick = os.sysconf("SC_CLK_TCK")


def children(pid):
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            out += [int(c) for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
        except OSError:
            pass
    return out


def descendants(pid):
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        try:
            todo += children(p)
        except OSError:
            pass
    return seen


def reading(pid):
    rows = []
    for t in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        base = f"/proc/{pid}/task/{t}"
        stat = open(f"{base}/stat").read()
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        f = stat[stat.rindex(")") + 2 :].split()
        ms = (int(f[11]) + int(f[12])) * 1000 // tick  # utime + stime
        st = dict(l.split(":", 1) for l in open(f"{base}/status") if ":" in l)
        rows.append((ms, t, comm, st["voluntary_ctxt_switches"].strip(), st["nonvoluntary_ctxt_switches"].strip(),
                     st["Cpus_allowed_list"].strip(), f[36]))
    return rows


p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
last, target = None, None
while p.poll() is None:
    try:
        if target is None:
            for d in descendants(p.pid):
                if open(f"/proc/{d}/comm").read().strip().startswith(name):
                    target = d
        if target is not None:
            last = reading(target)
    except (OSError, ValueError, KeyError, IndexError):
        pass  # the process or a thread ended between two reads
    time.sleep(0.02)
print(f"exit {p.returncode}; pid {target}; {len(last or [])} threads (last reading before exit)")
print("cpu_ms tid name voluntary forced allowed last_cpu")
for r in sorted(last or [], reverse=True):
    print(*r)
