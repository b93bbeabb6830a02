"""The four tools that use JVMPI beyond one agent: TAU's JVMPI layer, Bhavaya's ThreadDump,
nenya's libunsafe and SamIam's jvm_profiler. Builds, runs and checks (imported by suite.py)."""
import glob
import os
import re
import shutil
import signal
import subprocess
import time

import checks

HERE = os.path.dirname(os.path.abspath(__file__))

# bump a recipe to force its rebuild
RECIPES = {'tau': 'configure -c++=g++ -cc=gcc -jdk; make install; v1', 'bhavaya': 'v1', 'nenya': 'v1', 'samiam': 'v1'}


def build_tau(s, name, out, log):
    from suite import BuildError
    src = s.export('tau', os.path.join(s.work, 'src', name), ['.'],
                   exclude=['tools/src/contrib/jython.jar'])   # a blob some mirrors lack; not built for Java
    s.patch(src, 'tau-ucontext.patch')
    # TAU's -jdk=<dir>: a JDK folder whose include/ holds jni.h and the shim's jvmpi.h
    jdk = os.path.join(out, 'jdk')
    os.makedirs(jdk + '/bin')
    shutil.copytree(os.path.join(s.jdk, 'include'), jdk + '/include')
    for stray in glob.glob(jdk + '/include/**/jvmpi.h', recursive=True):
        os.remove(stray)
    shutil.copy(s.header, jdk + '/include/jvmpi.h')
    for tool in ('java', 'javac', 'jar'):
        os.symlink(os.path.join(s.jdk, 'bin', tool), os.path.join(jdk, 'bin', tool))
    others = [p for p in glob.glob(src + '/**/jvmpi.h', recursive=True)]
    if others:
        raise BuildError('TAU\'s tree has its own jvmpi.h: %s' % others)
    # portability: configure is a bash script (${var/./...}) that starts with #!/bin/sh
    s.sh(['bash', './configure', '-c++=g++', '-cc=gcc', '-jdk=' + jdk], cwd=src, log=log)
    s.sh(['nice', '-n', '5', 'make', 'install'], cwd=src, log=log)
    lib = os.path.join(src, 'x86_64', 'lib', 'libTAU.so')
    if not os.path.exists(lib):
        raise BuildError('no x86_64/lib/libTAU.so after make install')
    mk = open(log).read()
    if '-I%s/include ' % jdk not in mk or 'TauJava.cpp' not in mk:
        raise BuildError('TauJava.cpp was not compiled against %s/include' % jdk)
    shutil.copy(lib, out + '/libTAU.so')
    for tool in ('pprof',):
        p = os.path.join(src, 'x86_64', 'bin', tool)
        if os.path.exists(p):
            shutil.copy(p, out)
    return ' [jvmpi.h: the shim\'s, as <jdk>/include/jvmpi.h]'


def build_bhavaya(s, name, out, log):
    src = s.export('bhavaya', os.path.join(s.work, 'src', name),
                   ['src/c/Environment', 'test/org/bhavaya/util/ThreadDumpDemo.java'])
    s.patch(src, 'bhavaya-linux.patch')
    env = os.path.join(src, 'src/c/Environment')
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    files = ['Environment.cpp', 'ThreadDump.cpp', 'MonitorDumpRecord.cpp', 'JavaMonitorDumpRecord.cpp',
             'RawMonitorDumpRecord.cpp']
    objs = s.compile('g++', ['-fPIC', '-O1', '-w'] + s.inc() + ['-I' + env], [os.path.join(env, f) for f in files], objd, log)
    s.sh(['g++', '-shared', '-o', out + '/libEnvironment.so'] + objs, log=log)
    jsrc = os.path.join(HERE, 'java', 'bhavaya', 'org', 'bhavaya', 'util')
    s.sh([os.path.join(s.jdk, 'bin', 'javac'), '--release', '11', '-g', '-nowarn', '-d', out + '/classes',
          os.path.join(src, 'test/org/bhavaya/util/ThreadDumpDemo.java'),
          os.path.join(jsrc, 'Environment.java'), os.path.join(jsrc, 'SuiteThreadDump.java')], log=log)
    build_nothing(s, out, log)
    return s.check_headers(objd)


def build_nothing(s, out, log):
    s.sh(['gcc', '-fPIC', '-shared', '-O1'] + s.inc() + [os.path.join(HERE, 'standin', 'nothing.c'),
                                                         '-o', out + '/libnothing.so'], log=log)


def build_nenya(s, name, out, log):
    base = 'core/src/main/java/com/threerings/util/unsafe'
    src = s.export('nenya', os.path.join(s.work, 'src', name), [base])
    c = os.path.join(src, base, 'FreeBSD', 'com_threerings_util_unsafe_Unsafe.c')   # Linux/ links to it
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    # portability (flags): strerror() is called without <string.h> (an implicit int would cut
    # its pointer); the Makefile's -lX11 is not used by the code and is left out
    objs = s.compile('gcc', ['-fPIC', '-O1', '-w', '-include', 'string.h'] + s.inc() + ['-I' + os.path.join(src, base)],
                     [c], objd, log)
    s.sh(['gcc', '-shared', '-o', out + '/libunsafe.so'] + objs, log=log)
    j = os.path.join(HERE, 'java', 'nenya')
    s.sh([os.path.join(s.jdk, 'bin', 'javac'), '--release', '11', '-g', '-nowarn', '-d', out + '/classes',
          os.path.join(src, base, 'Unsafe.java'), j + '/com/samskivert/util/RunAnywhere.java',
          j + '/com/threerings/NenyaLog.java', j + '/SuiteNenyaGc.java'], log=log)
    build_nothing(s, out, log)
    return s.check_headers(objd)


def build_samiam(s, name, out, log):
    src = s.export('samiam', os.path.join(s.work, 'src', name),
                   ['inflib/library/jvm_profiler', 'inflib/edu/ucla/util/JVMProfiler.java'])
    lib = os.path.join(src, 'inflib/library/jvm_profiler')
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    objs = s.compile('g++', ['-fPIC', '-O1', '-w'] + s.inc() + ['-I' + lib], [lib + '/jvm_profiler.cpp'], objd, log)
    s.sh(['g++', '-shared', '-o', out + '/libjvm_profiler.so'] + objs, log=log)
    s.sh([os.path.join(s.jdk, 'bin', 'javac'), '--release', '11', '-g', '-nowarn', '-d', out + '/classes',
          os.path.join(src, 'inflib/edu/ucla/util/JVMProfiler.java'),
          os.path.join(HERE, 'java', 'samiam', 'SuiteSamIam.java')], log=log)
    return s.check_headers(objd)


BUILDS = [
    dict(name='tau', src=['tau'], fn=build_tau, patches=['tau-ucontext.patch'],
         note='TAU JVMPI layer: its configure -jdk=<dir with the shim\'s jvmpi.h>, make install; patches/tau-ucontext.patch'),
    dict(name='bhavaya', src=['bhavaya'], fn=build_bhavaya, patches=['bhavaya-linux.patch'],
         note='Bhavaya libEnvironment (ThreadDump) + patches/bhavaya-linux.patch; the demo; java/bhavaya stand-in'),
    dict(name='nenya', src=['nenya'], fn=build_nenya, note='nenya libunsafe + Unsafe.java; flag -include string.h'),
    dict(name='samiam', src=['samiam'], fn=build_samiam, note='SamIam jvm_profiler + JVMProfiler.java as published'),
]

NAMES = {'tau': 'TAU (JVMPI layer)', 'bhavaya': 'Bhavaya ThreadDump', 'nenya': 'nenya libunsafe', 'samiam': 'SamIam jvm_profiler'}

RUNS = [
    ('tau', 'profile', 'tau', 'libTAU.so', '',
     'one profile.0.0.<tid> per Java thread, exact call counts, incl >= excl, no "Runtime overlap"'),
    ('tau', 'sigquit', 'tau', 'libTAU.so', '',
     'kill -QUIT during the run writes dump.* snapshots; the final profiles stay exact'),
    ('bhavaya', 'lib-only', 'bhavaya', 'libEnvironment.so', '',
     'the deadlock demo\'s monitor dump: owners, entry counts, waiters, frames as Thread.getStackTrace; threads released'),
    ('bhavaya', 'beside-agent', 'bhavaya', 'libEnvironment.so', 'agent=libnothing.so', 'the same, with a do-nothing agent named'),
    ('nenya', 'lib-only', 'nenya', 'libunsafe.so', '', 'DisableGC (Serial GC): no collection in an 8 MB frame; none in a 96 MB overflow up to JDK 23 (the heap grows, as HotSpot 1.5\'s did), given up after disable-gc-max= and said once from JDK 24; EnableGC: they resume'),
    ('nenya', 'beside-agent', 'nenya', 'libunsafe.so', 'agent=libnothing.so', 'the same, with a do-nothing agent named'),
    ('samiam', 'agent', 'samiam', 'libjvm_profiler.so', '',
     'its self-test: loaded as agent and by System.loadLibrary, running, thread CPU time plausible against ThreadMXBean'),
]

JAVAC = {('tau', 'profile'): None}


# ------------------------------------------------------------------------------------------ TAU
def parse_tau_profile(path):
    """-> (thread names whose THREAD= timer ran here, {function: (calls, subrs, excl, incl)}, bad lines)"""
    funcs, bad = {}, 0
    with open(path, errors='replace') as f:
        head = f.readline()
        m = re.match(r'(\d+) templated_functions', head)
        n = int(m.group(1)) if m else -1
        f.readline()
        for _ in range(max(n, 0)):
            line = f.readline()
            m = re.match(r'^"(.*)" (\d+) (\d+) ([-\d.eE+]+) ([-\d.eE+]+) (\d+) GROUP="(.*)"', line)
            if not m:
                bad += 1
                continue
            funcs[m.group(1).strip()] = (int(m.group(2)), int(m.group(3)), float(m.group(4)), float(m.group(5)))
    threads = [k[len('THREAD='):].split('; THREAD GROUP=')[0] for k, v in funcs.items() if k.startswith('THREAD=') and v[0] > 0]
    return threads, funcs, bad + (0 if m or n >= 0 else 1)


def tau_profiles(c, rd, prefix='profile'):
    files = sorted(glob.glob(os.path.join(rd, prefix + '.0.0.*')), key=lambda p: int(p.rsplit('.', 1)[1]))
    c.need('tau-%s-files' % prefix, files, 'no %s.0.0.* files' % prefix)
    return {os.path.basename(p): parse_tau_profile(p) for p in files}


def tau_common(c, profs, err_text):
    bad = sum(p[2] for p in profs.values())
    c.need('tau-parse', bad == 0, '%d function lines that do not parse' % bad)
    # Rows of routines this thread never called are left out: TAU fills a thread's values to
    # dump without its database lock and never clears them for a routine created meanwhile (a
    # class loading in another thread), so such a row may hold garbage (README, known bugs).
    wrong = ['%s %s excl=%g incl=%g' % (f, k, v[2], v[3]) for f, p in profs.items() for k, v in p[1].items()
             if v[0] > 0 and v[3] < v[2]]
    c.need('tau-incl-ge-excl', not wrong, '%d rows with incl < excl, first: %s' % (len(wrong), wrong[:1]))
    c.need('tau-no-overlap', 'TAU: Runtime overlap' not in err_text,
           '%d "TAU: Runtime overlap" lines' % err_text.count('TAU: Runtime overlap'))


def tau_threads_once(c, profs):
    """every Java thread announced once, with its name: no name in two profiles, no empty name"""
    seen = {}
    for f, p in profs.items():
        for n in p[0]:
            if n not in ('JVM-MainThread', 'JVM-InternalThread'):
                seen.setdefault(n, []).append(f)
    twice = ['%s in %s' % (n or '<empty name>', ', '.join(fs)) for n, fs in sorted(seen.items()) if len(fs) > 1]
    c.need('tau-threads-once', not twice, 'a thread announced more than once: %s' % '; '.join(twice[:2]))
    c.need('tau-thread-names', '' not in seen, 'a thread announced with an empty name (%s)' % ', '.join(seen.get('', [])))


def tau_of_thread(c, profs, name):
    mine = [f for f, p in profs.items() if p[0] and name in p[0]]
    # a thread started by another (its THREAD_START seen there) shows its timer in both: take the file
    # where it is the only named thread, or else the single one
    own = [f for f in mine if len(profs[f][0]) == 1] or mine
    if not c.need('tau-thread-' + name, len(own) == 1, '%d profiles for thread %s: %s' % (len(own), name, own[:4])):
        return {}
    return profs[own[0]][1]


def tau_calls(c, funcs, thread, want):
    wrong = []
    for (cls, meth, sig), n in want.items():
        got = funcs.get('%s  %s %s' % (cls, meth, sig), (None,))[0]
        if got != n:
            wrong.append('%s.%s=%s want %s' % (cls, meth, got, n))
    c.need('tau-calls-' + thread, not wrong, ', '.join(wrong))


def check_tau(c, mode, rd, e, run):
    checks.workload_common(c, rd, e, run)
    profs = tau_profiles(c, rd)
    if not profs:
        return
    tau_common(c, profs, (checks.text(rd, 'stdout.txt') or '') + (checks.text(rd, 'stderr.txt') or ''))
    tau_threads_once(c, profs)
    spins = checks.spin_calls(c, run)
    main = tau_of_thread(c, profs, 'main')
    hot, node, item = e['hot_class'], e['alloc_class'], e['worker_class']
    if main:
        tau_calls(c, main, 'main', {(hot, e['hot_method'], e['hot_sig']): spins,
                                    (hot, 'makeNodes', '()V'): 1, (node, '<init>', '(I)V'): int(e['alloc_count'])})
    for w in e['workers'].split(','):
        f = tau_of_thread(c, profs, w)
        if f:
            tau_calls(c, f, w, {(hot, 'makeItem', '(I)V'): int(e['worker_items']), (hot + '$Worker', 'run', '()V'): 1,
                                (item, '<init>', '(I)V'): int(e['worker_items'])})
    f = tau_of_thread(c, profs, 'Waiter')
    if f:
        tau_calls(c, f, 'Waiter', {(hot + '$Sleeper', 'run', '()V'): 1})
    if mode == 'sigquit':
        sent = (checks.text(rd, 'sigquit.txt') or '').split()
        c.need('sigquit-sent', len(sent) == 2, 'SIGQUIT sent %d times (the run never reached its hot phase?)' % len(sent))
        dumps = glob.glob(os.path.join(rd, 'dump.0.0.*'))
        c.need('tau-dump-files', dumps, 'no dump.0.0.* snapshot after kill -QUIT')
        bad = [os.path.basename(d) for d in dumps if parse_tau_profile(d)[2]]
        c.need('tau-dump-parse', not bad, 'snapshots that do not parse: %s' % bad[:3])


def run_tau(s, jdk, tool, mode, build, lib, opts, base):
    from suite import W, run_workload
    if mode == 'profile':
        return run_workload(s, jdk, tool, mode, build, lib, opts, base)
    rd = os.path.join(s.work, 'runs', jdk, '%s-%s' % (tool, mode))
    libp = W(s, build, lib)
    if not os.path.exists(libp):
        os.makedirs(rd, exist_ok=True)
        return rd, 'FAIL build: no %s' % libp

    def quit_twice(p, rd):
        # wait for the workload's hot phase (it is past every thread's start), then two snapshots
        until = time.time() + s.args.timeout
        while time.time() < until and p.poll() is None:
            if 'PHASE hot' in (checks.text(rd, 'stdout.txt') or ''):
                for _ in range(2):
                    time.sleep(0.3)
                    if p.poll() is None:
                        os.kill(p.pid, signal.SIGQUIT)
                        open(os.path.join(rd, 'sigquit.txt'), 'a').write('%.3f\n' % time.time())
                return
            time.sleep(0.05)
    java = s.java_of(jdk)
    s.run_java(rd, [java, s.agentpath(libp, opts), '-cp', W(s, 'workload'), 'SuiteWorkload'], s.args.timeout,
               during=quit_twice)
    e = checks.expectations(os.path.join(base, 'stdout.txt'))
    run = checks.expectations(os.path.join(rd, 'stdout.txt'))
    return rd, checks.verdict(check_tau, mode, rd, e, run)


def check_tau_javac(c, tool, mode, rd, base, section):
    checks.javac_common(c, rd, base)
    profs = tau_profiles(c, rd)
    if not profs:
        return
    tau_common(c, profs, (checks.text(rd, 'stdout.txt') or '') + (checks.text(rd, 'stderr.txt') or ''))
    tau_threads_once(c, profs)
    # javac's entry point, counted once in the profile of the thread named main
    key = 'com.sun.tools.javac.Main  main ([Ljava/lang/String;)V'
    counts = {f: p[1].get(key, (0,))[0] for f, p in profs.items() if 'main' in p[0]}
    c.need('tau-javac-main', sorted(counts.values()) in ([1], [0, 1]), 'Main.main counted %s' % counts)


# ------------------------------------------------------------------------------------------ Bhavaya
def parse_bhavaya(t):
    """the dump between DUMP-BEGIN and DUMP-END -> list of Java monitors:
    dict(type, owner, entries, enter=[names], notify=[names], traces={name: [frames]})"""
    i, j = t.find('DUMP-BEGIN'), t.find('DUMP-END')
    if i < 0 or j < 0:
        return None
    mons = []
    for block in t[i:j].split('       -----Monitor-----')[1:]:
        m = re.search(r'Java monitor: \S+ of type: (\S+)', block)
        if not m:
            continue
        mon = dict(type=m.group(1).replace('/', '.'), enter=[], notify=[], traces={})
        mm = re.search(r'Owner thread has entered this monitor: (-?\d+) times', block)
        mon['entries'] = int(mm.group(1)) if mm else None
        mm = re.search(r'Owner thread: \S*?\((.*)\)\s*$', block, re.M)
        owner = re.search(r'ThreadName = \[([^\]]*)\]', mm.group(1)) if mm else None
        mon['owner'] = owner.group(1) if owner else None
        parts = re.split(r'Other threads awaiting (entry to this monitor|notify\(\) on the monitor): (\d+) their stacktraces are:', block)
        # parts: [owner part, kind, n, text, kind, n, text]
        for k in range(1, len(parts) - 2, 3):
            key = 'enter' if parts[k].startswith('entry') else 'notify'
            mon[key + '_count'] = int(parts[k + 1])
            for st in re.finditer(r'Stack trace \d+\nThread:\S*?\((.*)\)\n((?:     \S.*\n?)*)', parts[k + 2]):
                name = re.search(r'ThreadName = \[([^\]]*)\]', st.group(1))
                name = name.group(1) if name else '?'
                mon[key].append(name)
                mon['traces'][name] = [re.sub(r' \(Source: [^:]*:(-?\d+)\)$', r':\1', fr.strip()).replace('/', '.')
                                       for fr in st.group(2).splitlines() if fr.strip()]
        owner_trace = re.search(r'status: .*\nStack trace 1\nThread:\S*?\((.*)\)\n((?:     \S.*\n?)*)', parts[0])
        if owner_trace and mon['owner']:
            mon['traces'][mon['owner']] = [re.sub(r' \(Source: [^:]*:(-?\d+)\)$', r':\1', fr.strip()).replace('/', '.')
                                           for fr in owner_trace.group(2).splitlines() if fr.strip()]
        mons.append(mon)
    return mons


def check_bhavaya(c, mode, rd, e, run):
    if not checks.jvm_started(c, rd, 'DEMO-DONE'):
        return
    rc = checks.rc_of(rd)
    c.need('exit0', rc == '0', 'exit status %s' % rc)
    checks.no_crash(c, rd)
    t = checks.text(rd, 'stdout.txt') or ''
    c.need('demo-done', 'DEMO-DONE' in t, 'the demo did not finish')
    expect = {}
    for m in re.finditer(r'^EXPECT thread (\S+) (\S+) (.*)$', t, re.M):
        expect[m.group(1)] = (m.group(2), [f for f in m.group(3).split(';') if f])
    states = sorted(v[0] for v in expect.values())
    if not c.need('demo-state', states == ['BLOCKED'] * 6 + ['WAITING'], 'thread states before the dump: %s' % states):
        return
    mons = parse_bhavaya(t)
    if not c.need('dump', mons is not None, 'no thread dump printed'):
        return
    locks = [m for m in mons if m['type'].endswith('ThreadDumpDemo$DemoLock')]
    waiter = [n for n, v in expect.items() if v[0] == 'WAITING'][0]
    blocked = sorted(n for n, v in expect.items() if v[0] == 'BLOCKED')
    lock1 = [m for m in locks if m['owner']]
    lock2 = [m for m in locks if not m['owner']]
    c.need('dump-locks', len(lock1) == 1 and len(lock2) == 1,
           '%d DemoLock monitors with an owner, %d without (want 1 and 1)' % (len(lock1), len(lock2)))
    if lock1:
        m = lock1[0]
        c.need('lock1-owner', m['owner'] == waiter, 'owner %s, want %s (the thread waiting on lock2)' % (m['owner'], waiter))
        # HotSpot 1.5 wrote "entry count" = threads waiting to enter + threads waiting to be notified
        c.need('lock1-entries', m['entries'] == 6, 'entry count %s, want 6 (as HotSpot 1.5 wrote it: 6 + 0)' % m['entries'])
        c.need('lock1-enter', sorted(m['enter']) == blocked and m.get('enter_count') == 6,
               '%s waiting to enter (%s named), want the 6 blocked threads' % (m.get('enter_count'), len(m['enter'])))
        c.need('lock1-notify', m.get('notify_count') == 0, '%s waiting to be notified, want 0' % m.get('notify_count'))
    if lock2:
        m = lock2[0]
        c.need('lock2-notify', m.get('notify_count') == 1 and m['notify'] == [waiter],
               '%s waiting to be notified %s, want 1 [%s]' % (m.get('notify_count'), m['notify'], waiter))
        c.need('lock2-enter', m.get('enter_count') == 0, '%s waiting to enter, want 0' % m.get('enter_count'))
        c.need('lock2-entries', m['entries'] == 1, 'entry count %s, want 1 (as HotSpot 1.5 wrote it: 0 + 1)' % m['entries'])
    # frames: each thread's printed trace against Thread.getStackTrace() (class.method, and the line when known)
    wrong = []
    traces = {}
    for m in lock1 + lock2:
        traces.update(m['traces'])
    for name, (state, want) in expect.items():
        got = traces.get(name)
        if got is None:
            wrong.append('%s: no trace' % name)
            continue
        gm = [g.rsplit(':', 1) for g in got]
        wm = [w.rsplit(':', 1) for w in want]
        same = len(gm) == len(wm) and all(a[0] == b[0] and (int(b[1]) < 0 or a[1] == b[1]) for a, b in zip(gm, wm))
        if not same:
            wrong.append('%s: %s, want %s' % (name, got[:4], want[:4]))
    c.need('frames', not wrong, '; '.join(wrong[:2]))
    rel = re.search(r'^RELEASED (\d+)/(\d+)', t, re.M)
    c.need('released', rel and rel.group(1) == rel.group(2), 'threads ended after the dump: %s' % (rel.group(0) if rel else 'none'))


def shim_arg(s, out, opts, shim_opts=''):
    """the shim alone (it serves JVMPI to the libraries that ask), or with a do-nothing agent named;
    shim_opts: the shim's own options, before any agent="""
    if opts.startswith('agent='):
        return '-agentpath:%s=%sagent=%s' % (s.shim, shim_opts + ',' if shim_opts else '',
                                             os.path.join(out, opts[len('agent='):]))
    return '-agentpath:%s%s' % (s.shim, '=' + shim_opts if shim_opts else '')


def run_bhavaya(s, jdk, tool, mode, build, lib, opts, base):
    from suite import W
    rd = os.path.join(s.work, 'runs', jdk, '%s-%s' % (tool, mode))
    out = W(s, build)
    if not os.path.exists(os.path.join(out, lib)):
        os.makedirs(rd, exist_ok=True)
        return rd, 'FAIL build: no %s' % os.path.join(out, lib)
    cmd = ['timeout', '-k', '30', str(s.args.timeout), s.java_of(jdk), shim_arg(s, out, opts), '-Djava.awt.headless=true',
           '-Djava.library.path=' + out, '-cp', out + '/classes', 'org.bhavaya.util.SuiteThreadDump']
    s.run_java(rd, cmd, s.args.timeout + 60)
    return rd, checks.verdict(check_bhavaya, mode, rd, {}, {})


# ------------------------------------------------------------------------------------------ nenya
# How long the suite lets DisableGC hold collections off (the shim's `disable-gc-max=`, in seconds).
NENYA_GC_MAX = 2


def check_nenya(c, mode, rd, e, run):
    """A frame under DisableGC runs no collection on any JDK. An overflow (three times the young
    generation) runs none where the collector grows the heap under its GC locker, as HotSpot 1.5's
    did (Serial up to JDK 23); from JDK 24 the collector makes the allocating thread wait for the
    critical section instead (JDK-8192647), so the shim must give the section up after
    `disable-gc-max=`, say so once on stderr, and the program goes on."""
    if not checks.jvm_started(c, rd, 'NENYA-DONE'):
        return
    rc = checks.rc_of(rd)
    c.need('exit0', rc == '0', 'exit status %s' % rc)
    checks.no_crash(c, rd)
    c.need('done', 'NENYA-DONE' in (checks.text(rd, 'stdout.txt') or ''), 'the program did not finish')
    c.need('jvmpi-taken', run.get('initialized') == 'true', 'Unsafe.init() failed (GetEnv(JVMPI_VERSION_1) refused?)')
    frame, over, on = run.get('gc_frame'), run.get('gc_overflow'), run.get('gc_enabled')
    c.need('no-gc-in-frame', frame == '0', '%s collections in a frame while disabled, want 0' % frame)
    try:
        java = int(run.get('java', '0').split('.')[-1] if run.get('java', '').startswith('1.') else run.get('java', '0'))
    except ValueError:
        java = 0
    said = (checks.text(rd, 'stderr.txt') or '').count('DisableGC held collections off for')
    if 0 < java < 24:
        c.need('no-gc-while-disabled', over == '0', '%s collections in the overflow while disabled, want 0 '
               '(the collector grows the heap under its locker on JDK %d)' % (over, java))
        c.need('no-give-up', said == 0, 'the shim gave DisableGC up %d times, want 0' % said)
    elif java >= 24:
        try:
            ms = int(run.get('overflow_ms', ''))
        except ValueError:
            ms = -1
        c.need('gave-up-once', said == 1, 'the shim said %d times that it gave DisableGC up, want once' % said)
        c.need('overflow-bounded', 0 <= ms <= (NENYA_GC_MAX + 8) * 1000,
               'the overflow took %s ms, want the allocating thread released after disable-gc-max=%d s'
               % (ms, NENYA_GC_MAX))
    else:
        c.need('java-version', False, 'no EXPECT java=<version> line')
    c.need('gc-after-enable', on is not None and on.isdigit() and int(on) > 0,
           '%s collections after EnableGC, want some' % on)


def run_nenya(s, jdk, tool, mode, build, lib, opts, base):
    from suite import W
    rd = os.path.join(s.work, 'runs', jdk, '%s-%s' % (tool, mode))
    out = W(s, build)
    if not os.path.exists(os.path.join(out, lib)):
        os.makedirs(rd, exist_ok=True)
        return rd, 'FAIL build: no %s' % os.path.join(out, lib)
    cmd = ['timeout', '-k', '30', str(s.args.timeout), s.java_of(jdk),
           shim_arg(s, out, opts, 'disable-gc-max=%d' % NENYA_GC_MAX), '-XX:+UseSerialGC', '-Xms512m', '-Xmx512m', '-Xmn32m',
           '-Djava.library.path=' + out, '-cp', out + '/classes', 'SuiteNenyaGc']
    s.run_java(rd, cmd, s.args.timeout + 60)
    return rd, checks.verdict(check_nenya, mode, rd, {}, checks.expectations(os.path.join(rd, 'stdout.txt')))


# ------------------------------------------------------------------------------------------ SamIam
def check_samiam(c, mode, rd, e, run):
    if not checks.jvm_started(c, rd, 'SAMIAM-DONE'):
        return
    rc = checks.rc_of(rd)
    c.need('exit0', rc == '0', 'exit status %s' % rc)
    checks.no_crash(c, rd)
    t = checks.text(rd, 'stdout.txt') or ''
    c.need('loaded', 'JVMProfiler.loaded ? true' in t, 'System.loadLibrary("jvm_profiler") failed')
    c.need('running', 'JVMProfiler.profilerRunning() ? true' in t,
           'profilerRunning() is not true: its natives do not see what its JVM_OnLoad set')
    m = re.search(r'^elapsed cpu profile: (-?\d+)', t, re.M)
    mx = run.get('mx_cpu_ns')
    if c.need('cpu-printed', m and mx, 'no "elapsed cpu profile" line'):
        got, ref = int(m.group(1)), int(mx)
        c.need('cpu-plausible', ref > 0 and 0.5 * ref <= got <= 1.05 * ref + 1e6,
               'JVMPI says %d ns, ThreadMXBean %d ns around it' % (got, ref))


def run_samiam(s, jdk, tool, mode, build, lib, opts, base):
    from suite import W
    rd = os.path.join(s.work, 'runs', jdk, '%s-%s' % (tool, mode))
    out = W(s, build)
    libp = os.path.join(out, lib)
    if not os.path.exists(libp):
        os.makedirs(rd, exist_ok=True)
        return rd, 'FAIL build: no %s' % libp
    cmd = ['timeout', '-k', '30', str(s.args.timeout), s.java_of(jdk), s.agentpath(libp, opts),
           '-Djava.library.path=' + out, '-cp', out + '/classes', 'SuiteSamIam']
    s.run_java(rd, cmd, s.args.timeout + 60)
    return rd, checks.verdict(check_samiam, mode, rd, {}, checks.expectations(os.path.join(rd, 'stdout.txt')))


checks.WORKLOAD_CHECKS['tau'] = check_tau
OWN_RUNNERS = {'tau': run_tau, 'bhavaya': run_bhavaya, 'nenya': run_nenya, 'samiam': run_samiam}
JAVAC_CHECKS = {'tau': check_tau_javac}
