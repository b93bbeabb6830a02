"""Checkers of jvmpi-shim's real-agent suite: what a user of each tool reads, checked objectively.

Each checker takes a run folder (rc.txt, stdout.txt, stderr.txt and the tool's own output
files) and the expectations (the "EXPECT key=value" lines the suite's workload printed without
an agent on the same JDK), and returns a list of failures, each "check: detail". An empty list
is a PASS. A checker that raises is a FAIL (see verdict()).
"""
import glob
import os
import re
from collections import Counter, defaultdict


def expectations(path):
    """EXPECT key=value lines of a workload's stdout -> dict"""
    out = {}
    try:
        with open(path, errors='replace') as f:
            for line in f:
                m = re.match(r'EXPECT (\w+)=(.*)$', line.rstrip('\n'))
                if m:
                    out[m.group(1)] = m.group(2)
    except OSError:
        pass
    return out


def text(rd, name):
    try:
        with open(os.path.join(rd, name), errors='replace') as f:
            return f.read()
    except OSError:
        return None


class Stop(Exception):
    """raised by a checker after a failure that makes every further check meaningless"""


class Card:
    def __init__(self):
        self.fails = []

    def need(self, name, ok, detail=''):
        if not ok:
            self.fails.append('%s: %s' % (name, detail) if detail else name)
        return bool(ok)


def rc_of(rd):
    return (text(rd, 'rc.txt') or '?').strip()


def no_crash(c, rd):
    dumps = [os.path.basename(p) for p in glob.glob(os.path.join(rd, 'hs_err*')) + glob.glob(os.path.join(rd, 'core*'))]
    c.need('no-crash-file', not dumps, ' '.join(dumps))


def jvm_started(c, rd, marker):
    """False (and one failure naming the JVM's or the shim's first error line) when the program never ran"""
    out = text(rd, 'stdout.txt') or ''
    if rc_of(rd) == '0' or marker in out or re.search(r'^(EXPECT |PHASE |JVMProfiler)', out, re.M):
        return True
    err = [l for l in (text(rd, 'stderr.txt') or '').splitlines() if l.strip()]
    c.need('jvm-start', False, 'exit status %s before the program ran: %s' % (rc_of(rd), err[0][:200] if err else 'no message'))
    return False


def workload_common(c, rd, e, run):
    if not jvm_started(c, rd, 'WORKLOAD-DONE'):
        raise Stop()
    rc = rc_of(rd)
    c.need('exit0', rc == '0', 'exit status %s' % rc)
    no_crash(c, rd)
    c.need('workload-done', 'WORKLOAD-DONE' in (text(rd, 'stdout.txt') or ''), 'the workload did not finish')
    if 'rounds' in run:
        c.need('workload-sync', run['rounds'] == e.get('rounds_want'),
               'synchronized rounds %s, want %s' % (run['rounds'], e.get('rounds_want')))


def spin_calls(c, run):
    if not c.need('spin-calls-known', 'spin_calls' in run, 'the run printed no EXPECT spin_calls'):
        return None
    return int(run['spin_calls'])


def source_frame(e, which, fmt):
    cls, meth = e[which + '_method'].rsplit('.', 1)
    return fmt % {'cls': cls, 'meth': meth, 'file': cls.split('$')[0] + '.java', 'line': e[which + '_line']}


# ------------------------------------------------------------------------ HPROF (ascii report)
def section(t, name):
    """text between '<name> BEGIN' and '<name> END' (None when BEGIN or END is missing)"""
    i = t.find(name + ' BEGIN')
    if i < 0:
        return None
    j = t.find(name + ' END', i)
    return t[i:j] if j >= 0 else None


def hprof_traces(t):
    return {m.group(1): [f.strip() for f in m.group(2).splitlines()]
            for m in re.finditer(r'^TRACE (\d+):[^\n]*\n((?:\t[^\n]*\n)*)', t, re.M)}


def hprof_report(c, rd):
    t = text(rd, 'java.hprof.txt')
    c.need('hprof-report', t is not None and t.startswith('JAVA PROFILE'), 'no java.hprof.txt starting "JAVA PROFILE"')
    return t or ''


def hprof_sites(c, t, e, run):
    sec = section(t, 'SITES')
    if not c.need('sites', sec is not None, 'no complete SITES section'):
        return
    rows = [(int(m.group(2)), int(m.group(4)), m.group(5))
            for m in re.finditer(r'^\s*\d+\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s*$', sec, re.M)
            if m.group(6) == e['alloc_class']]
    if not c.need('sites-rows', rows, 'no SITES row for %s' % e['alloc_class']):
        return
    live, alloc = sum(r[0] for r in rows), sum(r[1] for r in rows)
    c.need('sites-counts', (alloc, live) == (int(e['alloc_count']), int(e['live_count'])),
           "%s alloc'ed %d live %d, want %s/%s" % (e['alloc_class'], alloc, live, e['alloc_count'], e['live_count']))
    biggest = max(rows, key=lambda r: r[1])
    frames = hprof_traces(t).get(biggest[2]) or ['<no TRACE %s>' % biggest[2]]
    want = source_frame(e, 'alloc', '%(cls)s.%(meth)s(%(file)s:%(line)s)')
    c.need('sites-frame', frames[0] == want, 'TRACE %s starts at %s, want %s' % (biggest[2], frames[0], want))
    started = set(re.findall(r'^THREAD START \(obj=\w+, id = \d+, name="([^"]*)"', t, re.M))
    missing = [n for n in e['threads'].split(',') if n not in started]
    c.need('thread-start', not missing, 'no THREAD START for %s' % ','.join(missing))


def hprof_cpu_rows(c, t, name):
    sec = section(t, name)
    if not c.need('cpu-section', sec is not None, 'no complete %s section' % name):
        return None
    total = re.search(r'BEGIN \(total = (\d+)\)', sec)
    rows = re.findall(r'^\s*\d+\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+\d+\s+(\S+)\s*$', sec, re.M)
    c.need('cpu-rows', total and int(total.group(1)) > 0 and rows, 'empty %s' % name)
    return rows


def hprof_samples(c, t, e, run):
    rows = hprof_cpu_rows(c, t, 'CPU SAMPLES')
    if rows:
        hot = e['hot_class'] + '.' + e['hot_method']
        c.need('samples-hot-first', rows[0][1] == hot, 'rank 1 is %s, want %s' % (rows[0][1], hot))


def hprof_times(c, t, e, run):
    rows = hprof_cpu_rows(c, t, 'CPU TIME (ms)')
    if rows:
        hot = e['hot_class'] + '.' + e['hot_method']
        n = sum(int(r[0]) for r in rows if r[1] == hot)
        want = spin_calls(c, run)
        c.need('times-calls', want is not None and n == want, '%s counted %d times, want %s' % (hot, n, want))
    c.need('times-no-mismatch', 'method on stack top' not in t, 'HPROF saw a METHOD_EXIT of another method')


def hprof_monitor(c, t, e, run):
    sec = section(t, 'MONITOR TIME')
    if c.need('monitor-time', sec is not None, 'no complete MONITOR TIME section'):
        # HPROF times contention in thread CPU time (as on HotSpot 1.5): a total of 0 ms lists nothing
        zero = 'MONITOR TIME BEGIN (total = 0 ms)' in sec
        c.need('monitor-lock', zero or re.search(r'\b%s\b.*\(Java\)' % re.escape(e['lock_class']), sec),
               'no (Java) entry for %s' % e['lock_class'])
    c.need('monitor-dump', section(t, 'MONITOR DUMP') is not None, 'no complete MONITOR DUMP section')


def hprof_dump(c, t, e, run):
    sec = section(t, 'HEAP DUMP')
    if not c.need('heap-dump', sec is not None, 'no complete HEAP DUMP section'):
        return
    bad = objs = 0
    for line in sec.splitlines()[1:]:
        if not line.strip() or line.startswith('\t'):
            continue
        if not re.match(r'(ROOT|CLS|OBJ|ARR) [0-9a-f]+ \(', line):
            bad += 1
        m = re.match(r'OBJ [0-9a-f]+ \(sz=\d+, trace=\d+, class=([^@\s]+)@[0-9a-f]+\)', line)
        if m and m.group(1) == e['alloc_class']:
            objs += 1
    c.need('heap-dump-records', bad == 0, '%d record lines that do not parse' % bad)
    c.need('heap-dump-live', objs == int(e['live_count']), '%d OBJ of %s, want %s' % (objs, e['alloc_class'], e['live_count']))


def check_hprof(c, mode, rd, e, run):
    workload_common(c, rd, e, run)
    t = hprof_report(c, rd)
    {'sites': hprof_sites, 'samples': hprof_samples, 'times': hprof_times, 'monitor': hprof_monitor,
     'dump': hprof_dump}[mode](c, t, e, run)


# ------------------------------------------------------------------------ JCOV (java.jcov 2.0)
def parse_jcov(t):
    """-> {class: {method: [(kind, line, column, count)]}}; 'DATA: C' items carry line << 10 | column"""
    out = defaultdict(dict)
    cls = meth = None
    packed = False
    for line in t.splitlines():
        if line.startswith('CLASS: '):
            cls, meth, packed = line.split()[1], None, False
        elif line.startswith('DATA: '):
            packed = line.split()[1] == 'C'
        elif line.startswith('METHOD: '):
            meth = line.split()[1]
            out[cls][meth] = []
        elif meth and re.match(r'\d+\t', line):
            kind, where, pos, count = [int(x) for x in line.split()[:4]]
            out[cls][meth].append((kind, where >> 10, where & 1023, count) if packed else (kind, where, pos, count))
    return out


def check_jcov(c, mode, rd, e, run):
    workload_common(c, rd, e, run)
    t = text(rd, 'java.jcov')
    if not c.need('jcov-file', t is not None and t.startswith('JCOV-DATA-FILE-VERSION'), 'no java.jcov'):
        return
    d = parse_jcov(t)
    main, node = e['hot_class'], e['alloc_class']
    c.need('jcov-classes', main in d and node in d, 'classes: %s' % ', '.join(sorted(d)[:5]))

    def calls(cls, meth):
        entries = [i[3] for i in d.get(cls, {}).get(meth, []) if i[0] == 1]   # kind 1: method entry
        return entries[0] if entries else None
    want = {(main, e['hot_method'] + e['hot_sig']): spin_calls(c, run),
            (main, e['alloc_method'].rsplit('.', 1)[1] + '()V'): 1,
            (node, '<init>(I)V'): int(e['alloc_count'])}
    wrong = ['%s.%s=%s want %s' % (k[0], k[1], calls(*k), v) for k, v in want.items() if v is not None and calls(*k) != v]
    c.need('jcov-calls', not wrong, ', '.join(wrong))
    if mode == 'typeB':
        line = int(e['keep_line'])
        branches = [i[3] for ms in d.get(main, {}).values() for i in ms if i[0] in (7, 8) and i[1] == line]
        keep = int(e['live_count'])
        drop = int(e['alloc_count']) - keep
        c.need('jcov-branches', keep in branches and drop in branches,
               'branch counts on line %d: %s, want %d and %d among them' % (line, branches, keep, drop))


# ------------------------------------------------------------------------ oprofile (stand-in log)
def check_oprofile(c, mode, rd, e, run):
    workload_common(c, rd, e, run)
    t = text(rd, 'opagent.log')
    if not c.need('opagent-open', t is not None and 'op_open_agent()' in t, 'no op_open_agent() in opagent.log'):
        return
    sym = 'L%s;%s%s' % (e['hot_class'], e['hot_method'], e['hot_sig'])
    hits = re.findall(r'op_write_native_code\(\S+, "%s", vma=0x([0-9a-f]+), code=\S+, size=(\d+)\) map=(\S+)' % re.escape(sym), t)
    if c.need('jit-hot-method', hits, 'no op_write_native_code for %s (%d in all)' % (sym, t.count('op_write_native_code('))):
        c.need('jit-code-plausible', any(int(size) > 0 and 'x' in perms for _, size, perms in hits),
               'size/mapping of %s: %s' % (sym, hits[:3]))
    c.need('opagent-close', 'op_close_agent(' in t, 'the agent was never closed (no JVM_SHUT_DOWN)')


# ------------------------------------------------------------------------ StarJ (analyzer's event printer)
def check_starj(c, mode, rd, e, run):
    workload_common(c, rd, e, run)
    dat = os.path.join(rd, 'StarJ.dat')
    c.need('trace-written', os.path.exists(dat) and os.path.getsize(dat) > 64, 'no StarJ.dat')
    arc = (text(rd, 'analyzer.rc') or '?').strip()
    ev = os.path.join(rd, 'events.txt')
    if not c.need('trace-readable', arc == '0' and os.path.exists(ev), 'the analyzer exited with %s' % arc):
        return
    classes, methods, names = {}, {}, {}
    allocs = defaultdict(Counter)       # class id -> thread name -> plain objects
    obj_class, entries, contended = {}, Counter(), Counter()
    cls = None
    with open(ev, errors='replace') as f:
        for line in f:
            if line.startswith('    [') and cls:
                m = re.match(r'\s+\[(-?\d+)\]: (\S+?)(\(.*)$', line)
                if m:
                    methods[m.group(1)] = (cls, m.group(2), m.group(3).strip())
                continue
            m = re.match(r'([A-Z_0-9]+) \[\d+\] @ (-?\d+) \{(.*)', line)
            if not m:
                continue
            kind, env, rest = m.groups()
            cls = None
            if kind == 'CLASS_LOAD':
                m = re.match(r'id=(-?\d+), name=([^,]+),', rest)
                if m:
                    classes[m.group(2)] = m.group(1)
                    cls = m.group(2)
            elif kind == 'THREAD_START':
                m = re.search(r'thread_name=([^,]*),.*thread_env_id=(-?\d+)', rest)
                if m:
                    names[m.group(2)] = m.group(1)   # env ids are reused: the name at this point of the trace
            elif kind == 'OBJECT_ALLOC':
                m = re.match(r'id=(-?\d+), arena_id=-?\d+, class_id=(-?\d+), is_array=(-?\d+)', rest)
                if m and m.group(3) == '0':
                    allocs[m.group(2)][names.get(env, env)] += 1
                    obj_class[m.group(1)] = m.group(2)
            elif kind in ('METHOD_ENTRY', 'METHOD_ENTRY2'):
                m = re.match(r'id=(-?\d+)', rest)
                if m:
                    entries[m.group(1)] += 1
            elif kind == 'MONITOR_CONTENDED_ENTER':
                m = re.match(r'object=(-?\d+)', rest)
                if m:
                    contended[m.group(1)] += 1
    n = sum(allocs[classes[e['alloc_class']]].values()) if e['alloc_class'] in classes else 0
    c.need('alloc-count', n == int(e['alloc_count']), '%d OBJECT_ALLOC of %s, want %s' % (n, e['alloc_class'], e['alloc_count']))
    per = allocs[classes[e['worker_class']]] if e['worker_class'] in classes else Counter()
    wrong = ['%s=%d' % (w, per[w]) for w in e['workers'].split(',') if per[w] != int(e['worker_items'])]
    c.need('alloc-per-thread', not wrong, '%s by %s, want %s each' % (e['worker_class'], ', '.join(wrong), e['worker_items']))
    hot = (e['hot_class'], e['hot_method'], e['hot_sig'])
    got = sum(entries[i] for i, m in methods.items() if m == hot)
    want = spin_calls(c, run)
    c.need('method-entries', got == want, '%d METHOD_ENTRY of %s.%s, want %s' % (got, hot[0], hot[1], want))
    lock = classes.get(e['lock_class'])
    c.need('contention', any(contended[o] for o, k in obj_class.items() if k == lock),
           'no MONITOR_CONTENDED_ENTER on the %s (%d in all)' % (e['lock_class'], sum(contended.values())))


# ------------------------------------------------------------------------ NiagaraST (niag_prof<N>.txt)
def check_niagara(c, mode, rd, e, run):
    workload_common(c, rd, e, run)
    files = sorted(glob.glob(os.path.join(rd, 'niag_prof*.txt')), key=lambda p: int(re.search(r'(\d+)\.txt$', p).group(1)))
    if not c.need('niagara-profile', files, 'no niag_prof*.txt'):
        return
    t = text(rd, os.path.basename(files[-1]))
    threads = {}
    for m in re.finditer(r'^Thread: (.*?)-----Total Memory Allocd \d+\(bytes\)[^\n]*\n(.*?)(?=^Thread: |\Z)', t, re.M | re.S):
        traces = []
        for tm in re.finditer(r'TRACE:\d+\s+Allocd: (\d+) \(bytes\) Live: (-?\d+) \(bytes\) Num Allocs: (\d+)\n((?:\s+\d+\) [^\n]*\n?)*)',
                              m.group(2)):
            frames = re.findall(r'\d+\) (.*?)\s*$', tm.group(4), re.M)
            traces.append((int(tm.group(1)), int(tm.group(2)), int(tm.group(3)), frames[0] if frames else None))
        threads[m.group(1)] = traces
    items = int(e['worker_items'])
    item_frame = source_frame(e, 'worker', '%(cls)s::%(meth)s (line:%(line)s)')
    for w in e['workers'].split(','):
        if not c.need('thread-' + w, w in threads, 'no "Thread: %s" block (%s)' % (w, ', '.join(sorted(threads)))):
            continue
        mine = [tr for tr in threads[w] if tr[2] == items]
        if c.need('allocs-' + w, mine, 'no trace of %d allocations' % items):
            c.need('frame-' + w, any(tr[3] == item_frame for tr in mine),
                   'top frames %s, want %s' % ([tr[3] for tr in mine][:2], item_frame))
    nodes, live = int(e['alloc_count']), int(e['live_count'])
    big = [tr for trs in threads.values() for tr in trs if tr[2] == nodes]
    if c.need('allocs-main', big, 'no trace of %d allocations' % nodes):
        c.need('live-main', any(tr[1] * nodes == tr[0] * live for tr in big),
               'live/allocated bytes %s, want the ratio %d/%d' % ([(tr[1], tr[0]) for tr in big], live, nodes))
        want = source_frame(e, 'alloc', '%(cls)s::%(meth)s (line:%(line)s)')
        c.need('frame-main', any(tr[3] == want for tr in big), 'top frames %s, want %s' % ([tr[3] for tr in big][:2], want))


WORKLOAD_CHECKS = {'hprof': check_hprof, 'jcov': check_jcov, 'oprofile': check_oprofile, 'starj': check_starj,
                   'niagara': check_niagara}


def verdict(fn, *args):
    """run a checker -> 'PASS' or 'FAIL check: detail; ...' (a checker that raises fails)"""
    c = Card()
    try:
        fn(c, *args)
    except Stop:
        pass
    except Exception as ex:  # noqa: BLE001 -- a broken checker must never pass
        c.need('checker', False, '%s: %s' % (type(ex).__name__, ex))
    return 'PASS' if not c.fails else 'FAIL ' + '; '.join(c.fails)


# ------------------------------------------------------------------------ javac (a real program)
# JCOV's class-file parser predates constant-pool kinds 15-20: these lines are its limit, not errors
JCOV_OLD_PARSER = re.compile(r'unrecognized constant pool entry|bad constant pool format')


def javac_common(c, rd, base):
    rc, want = rc_of(rd), rc_of(base)
    c.need('javac-exit', rc == want, 'exit status %s, %s without an agent' % (rc, want))
    n, m = (text(rd, 'classes.txt') or '?').strip(), (text(base, 'classes.txt') or '?').strip()
    c.need('javac-classes', n == m and n != '0', '%s class files, %s without an agent' % (n, m))
    no_crash(c, rd)
    c.need('no-timeout', '[suite] timed out' not in (text(rd, 'stderr.txt') or ''), 'killed at the time limit')


def javac_tool(c, tool, mode, rd, section_name):
    err = text(rd, 'stderr.txt') or ''
    if tool == 'hprof':
        t = text(rd, 'java.hprof.txt') or ''
        bad = [l for l in err.splitlines() + t.splitlines() if 'HPROF ERROR' in l]
        c.need('hprof-no-error', not bad, '%d "HPROF ERROR" lines, first: %s' % (len(bad), bad[:1]))
        sec = section(t, section_name)
        if c.need('hprof-section', sec is not None, 'no complete %s section' % section_name):
            if mode == 'samples':
                # javac's run is short: start-up and class loading take many samples; at least a
                # quarter of them must be in traces (depth 4) that show javac's own code
                rows = re.findall(r'^\s*\d+\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+(\d+)\s+\S+\s*$', sec, re.M)
                traces = hprof_traces(t)
                total = sum(int(r[0]) for r in rows)
                javac = sum(int(r[0]) for r in rows if any('com.sun.tools.javac.' in f for f in traces.get(r[1], [])))
                c.need('samples-javac', total and javac * 4 >= total,
                       '%d of %d samples in traces with a javac frame, want a quarter' % (javac, total))
            if mode == 'times':
                c.need('times-no-mismatch', 'method on stack top' not in t, 'HPROF saw a METHOD_EXIT of another method')
                rows = re.findall(r'^\s*\d+\s+[\d.]+%\s+[\d.]+%\s+\d+\s+\d+\s+(\S+)\s*$', sec, re.M)
                c.need('times-javac', any(r.startswith('com.sun.tools.javac.') for r in rows), 'no javac method')
            if mode == 'sites':
                rows = re.findall(r'^\s*1\s+[\d.]+%\s+[\d.]+%\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s+\S+\s*$', sec, re.M)
                frames = hprof_traces(t).get(rows[0]) if rows else None
                c.need('sites-trace', frames, 'the top site has no TRACE with frames')
    elif tool == 'jcov':
        t = text(rd, 'java.jcov') or ''
        bad = [l for l in err.splitlines() if 'JCOV error' in l and not JCOV_OLD_PARSER.search(l)]
        c.need('jcov-no-error', not bad, '%d error lines, first: %s' % (len(bad), bad[:1]))
        d = parse_jcov(t) if t.startswith('JCOV-DATA-FILE-VERSION') else {}
        main = d.get('com/sun/tools/javac/main/Main', {})
        called = [m for m, items in main.items() if any(i[0] == 1 and i[3] > 0 for i in items)]
        c.need('jcov-javac-main', called, 'no method of com/sun/tools/javac/main/Main counted (%d classes)' % len(d))
    elif tool == 'oprofile':
        t = text(rd, 'opagent.log') or ''
        hits = re.findall(r'op_write_native_code\(\S+, "Lcom[./]sun[./]tools[./]javac[./][^"]*", vma=0x[0-9a-f]+, code=\S+, size=(\d+)\) map=(\S+)', t)
        c.need('jit-javac', any(int(n) > 0 and 'x' in p for n, p in hits), '%d javac methods registered' % len(hits))
        c.need('opagent-close', 'op_close_agent(' in t, 'the agent was never closed')
