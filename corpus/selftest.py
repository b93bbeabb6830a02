"""Self-test of the suite's checkers: for each checker, a small sample of the tool's correct output
(written here, in the tool's format) must PASS, and every corruption of it must FAIL.

    corpus/run.sh --selftest
"""
import os
import re
import shutil
import tempfile

import checks
import newtools

# what the workload would print (small numbers: the checkers take every number from here)
E = dict(alloc_class='SuiteNode', alloc_count='10', live_count='2', alloc_method='SuiteWorkload.makeNodes',
         alloc_line='31', keep_line='32', worker_class='SuiteItem', worker_items='3',
         worker_method='SuiteWorkload.makeItem', worker_line='37', threads='Worker-1,Worker-2,Waiter',
         workers='Worker-1,Worker-2', hot_class='SuiteWorkload', hot_method='spin', hot_sig='(I)J',
         spin_calls='7', lock_class='SuiteLock', rounds='400', rounds_want='400')


def stdout_of(e):
    return ''.join('EXPECT %s=%s\n' % kv for kv in e.items()) + 'PHASE hot\nWORKLOAD-DONE\n'


def base_files():
    return {'rc.txt': '0\n', 'stdout.txt': stdout_of(E), 'stderr.txt': ''}


HPROF_HEAD = 'JAVA PROFILE 1.0.1, created Mon Dec  7 12:00:00 2026\n\n'
THREADS = ''.join('THREAD START (obj=%x, id = %d, name="%s", group="main")\n' % (0x100 + i, i + 1, n)
                  for i, n in enumerate(['main', 'Worker-1', 'Worker-2', 'Waiter']))


def hprof_sites():
    f = base_files()
    f['java.hprof.txt'] = HPROF_HEAD + THREADS + (
        'TRACE 5:\n\tSuiteWorkload.makeNodes(SuiteWorkload.java:31)\n\tSuiteWorkload.main(SuiteWorkload.java:120)\n'
        'TRACE 6: (thread=2)\n\tSuiteWorkload.makeItem(SuiteWorkload.java:37)\n'
        'SITES BEGIN (ordered by live bytes) Mon Dec  7 12:00:01 2026\n'
        '          percent         live       alloc\'ed  stack class\n'
        ' rank   self  accum    bytes objs   bytes objs trace name\n'
        '    1 50.00% 50.00%       48     2     240    10     5 SuiteNode\n'
        '    2 10.00% 60.00%       24     1      72     3     6 SuiteItem\n'
        'SITES END\n')
    return f


def hprof_cpu(name, rows):
    f = base_files()
    f['java.hprof.txt'] = HPROF_HEAD + '%s BEGIN (total = 100) Mon Dec  7 12:00:01 2026\n' % name + \
        'rank   self  accum   count trace method\n' + rows + '%s END\n' % name
    return f


def hprof_monitor():
    f = base_files()
    f['java.hprof.txt'] = HPROF_HEAD + (
        'MONITOR DUMP BEGIN\n    THREAD 1, trace 4, status: R\nMONITOR DUMP END\n'
        'MONITOR TIME BEGIN (total = 12 ms) Mon Dec  7 12:00:01 2026\n'
        'rank   self  accum   count trace monitor\n'
        '    1 100.00% 100.00%      12     9 SuiteLock@ed3c (Java)\n'
        'MONITOR TIME END\n')
    return f


def hprof_dump():
    f = base_files()
    f['java.hprof.txt'] = HPROF_HEAD + (
        'HEAP DUMP BEGIN (4 objects, 96 bytes) Mon Dec  7 12:00:01 2026\n'
        'ROOT b04346a0 (kind=<thread>, id=2, trace=196)\n'
        'CLS b09b33e0 (name=SuiteNode, trace=3)\n'
        'OBJ b1468470 (sz=24, trace=161, class=SuiteNode@b09b33e0)\n'
        '\tnext\tb1468290\n'
        'OBJ b1468290 (sz=24, trace=161, class=SuiteNode@b09b33e0)\n'
        'ARR b1468000 (sz=16, trace=2, nelems=2, elem type=SuiteNode@b09b33e0)\n'
        'HEAP DUMP END\n')
    return f


def jcov(kind):
    f = base_files()
    packed = lambda line, col: line << 10 | col  # noqa: E731
    body = ('JCOV-DATA-FILE-VERSION: 2.0\nCLASS: SuiteWorkload [public]\nSRCFILE: SuiteWorkload.java\nTIMESTAMP: 0\n'
            'DATA: C\n#kind\tstart\tend\t\tcount\nMETHOD: spin(I)J [static]\n1\t%d\t0\t\t7\n'
            'METHOD: makeNodes()V [static]\n1\t%d\t0\t\t1\n' % (packed(41, 5), packed(30, 5)))
    if kind == 'typeB':
        body += '7\t%d\t%d\t\t2\n8\t%d\t%d\t\t8\n' % (packed(32, 13), packed(32, 20), packed(32, 13), packed(32, 20))
    body += ('CLASS: SuiteNode [final]\nSRCFILE: SuiteWorkload.java\nTIMESTAMP: 0\nDATA: C\n#kind\tstart\tend\t\tcount\n'
             'METHOD: <init>(I)V []\n1\t%d\t0\t\t10\n' % packed(170, 5))
    f['java.jcov'] = body
    return f


def oprofile():
    f = base_files()
    f['opagent.log'] = ('op_open_agent()\n'
                        'op_write_native_code(0x1, "LSuiteWorkload;spin(I)J", vma=0x7f0000001000, code=0x7f0000001000, '
                        'size=412) map=rwxp [anon]\n'
                        'op_close_agent(0x1) loads=1 unloads=0\n')
    return f


def starj():
    f = base_files()
    ev = ['JVM_INIT_DONE [11] @ 0 {}']
    ev += ['THREAD_START [33] @ 1 {id=50%d, thread_name=%s, group_name=main, parent_name=system, thread_env_id=10%d}' % (i, n, i)
           for i, n in enumerate(['main', 'Worker-1', 'Worker-2'])]
    ev += ['CLASS_LOAD [2] @ 100 {id=11, name=SuiteNode, source_name=SuiteWorkload.java, iface_count=0',
           '  1 methods:', '    [901]: <init>(I)V', '}',
           'CLASS_LOAD [2] @ 100 {id=12, name=SuiteItem, source_name=SuiteWorkload.java, iface_count=0', '}',
           'CLASS_LOAD [2] @ 100 {id=13, name=SuiteLock, source_name=SuiteWorkload.java, iface_count=0', '}',
           'CLASS_LOAD [2] @ 100 {id=10, name=SuiteWorkload, source_name=SuiteWorkload.java, iface_count=0',
           '  2 methods:', '    [910]: makeNodes()V', '    [911]: spin(I)J', '}',
           'OBJECT_ALLOC [25] @ 100 {id=7000, arena_id=1, class_id=13, is_array=0, size=16}']
    ev += ['OBJECT_ALLOC [25] @ 100 {id=%d, arena_id=1, class_id=11, is_array=0, size=24}' % (7001 + i) for i in range(10)]
    ev += ['OBJECT_ALLOC [25] @ 100 {id=7020, arena_id=1, class_id=11, is_array=2, size=40}']
    for env in (101, 102):
        ev += ['OBJECT_ALLOC [25] @ %d {id=%d, arena_id=1, class_id=12, is_array=0, size=24}' % (env, 8000 + env * 10 + i)
               for i in range(3)]
    ev += ['MONITOR_CONTENDED_ENTER [21] @ 101 {object=7000}']
    ev += ['METHOD_ENTRY2 [6] @ 100 {id=911, obj_id=0}'] * 7
    f['events.txt'] = '\n'.join(ev) + '\n'
    f['StarJ.dat'] = 'x' * 100
    f['analyzer.rc'] = '0\n'
    return f


def niagara():
    f = base_files()
    f['niag_prof0.txt'] = ('Thread: Worker-2-----Total Memory Allocd 72(bytes)  Live Memory 0(bytes)\n'
                           '   TRACE:0  Allocd: 72 (bytes) Live: 0 (bytes) Num Allocs: 3\n'
                           '      1) SuiteWorkload::makeItem (line:37)\n      2) SuiteWorkload$Worker::run (line:70)\n\n'
                           'Thread: Worker-1-----Total Memory Allocd 72(bytes)  Live Memory 0(bytes)\n'
                           '   TRACE:0  Allocd: 72 (bytes) Live: 0 (bytes) Num Allocs: 3\n'
                           '      1) SuiteWorkload::makeItem (line:37)\n      2) SuiteWorkload$Worker::run (line:70)\n\n'
                           'Thread: main-----Total Memory Allocd 240(bytes)  Live Memory 48(bytes)\n'
                           '   TRACE:81  Allocd: 240 (bytes) Live: 48 (bytes) Num Allocs: 10\n'
                           '      1) SuiteWorkload::makeNodes (line:31)\n      2) SuiteWorkload::main (line:120)\n')
    return f


def tau_file(threads_here, rows):
    """a TAU profile: the THREAD= timers (name -> calls) and function rows (name -> (calls, subrs, excl, incl))"""
    lines = ['"THREAD=%s; THREAD GROUP=main  " %d 1 10 100 0 GROUP="THREAD" ' % (n, c) for n, c in threads_here.items()]
    lines += ['"%s  " %d %d %d %d 0 GROUP="x" ' % (k, v[0], v[1], v[2], v[3]) for k, v in rows.items()]
    return '%d templated_functions_MULTI_TIME\n# Name Calls Subrs Excl Incl ProfileCalls #\n%s\n0 aggregates\n' % (
        len(lines), '\n'.join(lines))


def tau(mode):
    f = base_files()
    f['profile.0.0.0'] = tau_file({'JVM-MainThread': 1}, {})
    f['profile.0.0.1'] = tau_file({'main': 1}, {'SuiteWorkload  spin (I)J': (7, 0, 50, 50),
                                                'SuiteWorkload  makeNodes ()V': (1, 10, 5, 20),
                                                'SuiteNode  <init> (I)V': (10, 10, 3, 4)})
    for i, w in enumerate(['Worker-1', 'Worker-2']):
        f['profile.0.0.%d' % (2 + i)] = tau_file({w: 1}, {'SuiteWorkload  makeItem (I)V': (3, 3, 1, 2),
                                                        'SuiteWorkload$Worker  run ()V': (1, 3, 8, 10),
                                                        'SuiteItem  <init> (I)V': (3, 3, 1, 1),
                                                        # TAU's own race: a routine never called
                                                        # here, written with values never set
                                                        'SuiteWorkload  main ([Ljava/lang/String;)V': (0, 0, 7, 0)})
    f['profile.0.0.4'] = tau_file({'Waiter': 1}, {'SuiteWorkload$Sleeper  run ()V': (1, 1, 2, 200)})
    if mode == 'sigquit':
        f['sigquit.txt'] = '1.0\n1.3\n'
        f['dump.0.0.1'] = f['profile.0.0.1']
    return f


def bhavaya():
    names = ['Thread-%d' % i for i in range(7)]
    lines = ['EXPECT thread Thread-0 WAITING java.lang.Object.wait:-2;org.bhavaya.util.ThreadDumpDemo$DeadlockThread.lock:60;'
             'org.bhavaya.util.ThreadDumpDemo$DeadlockThread.run:52;']
    lines += ['EXPECT thread %s BLOCKED org.bhavaya.util.ThreadDumpDemo$DeadlockThread.run:51;' % n for n in names[1:]]

    def th(n):
        return 'Thread:0x7f%s(  ThreadName = [%s]  GroupName = [main]  ParentName = [system])' % (n[-1], n)
    lock1 = ['       -----Monitor-----', 'Java monitor: 0x1 of type: org.bhavaya.util.ThreadDumpDemo$DemoLock', '',
             'Owner thread has entered this monitor: 6 times',
             'Owner thread: 0x7f0(  ThreadName = [Thread-0]  GroupName = [main]  ParentName = [system])',
             'status: condition wait', 'Stack trace 1', th('Thread-0'),
             '     java.lang.Object.wait (Source: Object.java:-3)',
             '     org.bhavaya.util.ThreadDumpDemo$DeadlockThread.lock (Source: ThreadDumpDemo.java:60)',
             '     org.bhavaya.util.ThreadDumpDemo$DeadlockThread.run (Source: ThreadDumpDemo.java:52)', '',
             'Other threads awaiting entry to this monitor: 6 their stacktraces are:']
    for i, n in enumerate(names[1:]):
        lock1 += ['Stack trace %d' % (i + 1), th(n), '     org.bhavaya.util.ThreadDumpDemo$DeadlockThread.run (Source: ThreadDumpDemo.java:51)']
    lock1 += ['', 'Other threads awaiting notify() on the monitor: 0 their stacktraces are:', '']
    lock2 = ['       -----Monitor-----', 'Java monitor: 0x2 of type: org.bhavaya.util.ThreadDumpDemo$DemoLock', '',
             'Owner thread has entered this monitor: 1 times', 'Owner thread: 0()', 'status: unknown', 'Stack trace 1',
             'Thread:0()', '', 'Other threads awaiting entry to this monitor: 0 their stacktraces are:', '',
             'Other threads awaiting notify() on the monitor: 1 their stacktraces are:', 'Stack trace 1', th('Thread-0'),
             '     java.lang.Object.wait (Source: Object.java:-3)',
             '     org.bhavaya.util.ThreadDumpDemo$DeadlockThread.lock (Source: ThreadDumpDemo.java:60)',
             '     org.bhavaya.util.ThreadDumpDemo$DeadlockThread.run (Source: ThreadDumpDemo.java:52)', '']
    lines += ['DUMP-BEGIN', '', '-----------------BEGIN DUMP------------------', 'Got 9 traces'] + lock1 + lock2
    lines += ['', '-----------------END DUMP------------------', 'DUMP-END', 'RELEASED 7/7', 'DEMO-DONE']
    return {'rc.txt': '0\n', 'stderr.txt': '', 'stdout.txt': '\n'.join(lines) + '\n'}


def nenya():
    return {'rc.txt': '0\n', 'stderr.txt': '',
            'stdout.txt': ('EXPECT initialized=true\nEXPECT java=17\nEXPECT gc_frame=0\nEXPECT gc_overflow=0\n'
                           'EXPECT overflow_ms=420\nEXPECT gc_enabled=4\nNENYA-DONE\n')}


def nenya25():
    return {'rc.txt': '0\n',
            'stderr.txt': ('jvmpi-shim: warning: DisableGC held collections off for 2000 ms without EnableGC: given up, '
                           'so that a thread waiting for memory (perhaps the one that would call EnableGC) cannot wait '
                           'for ever (disable-gc-max=; said once)\n'),
            'stdout.txt': ('EXPECT initialized=true\nEXPECT java=25\nEXPECT gc_frame=0\nEXPECT gc_overflow=3\n'
                           'EXPECT overflow_ms=2300\nEXPECT gc_enabled=4\nNENYA-DONE\n')}


def samiam():
    return {'rc.txt': '0\n', 'stderr.txt': '',
            'stdout.txt': ('JVMProfiler.loaded ? true\nJVMProfiler.profilerRunning() ? true\ncpu_start:           1000\n'
                           'cpu_end:             900001000\nelapsed cpu profile: 900000000\nEXPECT mx_cpu_ns=910000000\n'
                           'SAMIAM-DONE\n')}


def sub(file, old, new, count=1):
    """a corruption: replace the first `count` occurrences of old in file (old must be there)"""
    def apply(f):
        assert old in f[file], 'corruption target %r not in %s' % (old, file)
        f[file] = f[file].replace(old, new, count)
    return apply


def drop_line(file, pattern):
    def apply(f):
        lines = f[file].split('\n')
        idx = [i for i, l in enumerate(lines) if re.search(pattern, l)]
        assert idx, 'corruption target %r not in %s' % (pattern, file)
        del lines[idx[0]]
        f[file] = '\n'.join(lines)
    return apply


def remove(file):
    def apply(f):
        del f[file]
    return apply


W = checks.WORKLOAD_CHECKS
# (name, checker, mode, expectations, good sample, [corruptions that must fail])
CASES = [
    ('hprof-sites', W['hprof'], 'sites', E, hprof_sites, [
        sub('java.hprof.txt', 'makeNodes(SuiteWorkload.java:31)', 'makeNodes(SuiteWorkload.java:30)'),
        sub('java.hprof.txt', '240    10', '264    11'),
        drop_line('java.hprof.txt', 'name="Waiter"'),
        drop_line('java.hprof.txt', '^SITES END'),
        sub('rc.txt', '0', '1'),
        sub('stdout.txt', 'WORKLOAD-DONE', '')]),
    ('hprof-samples', W['hprof'], 'samples', E,
     lambda: hprof_cpu('CPU SAMPLES', '   1 90.00% 90.00%      90     7 SuiteWorkload.spin\n'
                                      '   2 10.00% 100.00%     10     8 SuiteWorkload.hot\n'), [
        sub('java.hprof.txt', 'SuiteWorkload.spin', 'SuiteWorkload.hotx'),
        sub('java.hprof.txt', '(total = 100)', '(total = 0)')]),
    ('hprof-times', W['hprof'], 'times', E,
     lambda: hprof_cpu('CPU TIME (ms)', '   1 90.00% 90.00%       4     7 SuiteWorkload.spin\n'
                                        '   2  9.00% 99.00%       3     8 SuiteWorkload.spin\n'
                                        '   3  1.00% 100.00%      1     9 SuiteWorkload.hot\n'), [
        sub('java.hprof.txt', '       3     8 SuiteWorkload.spin', '       2     8 SuiteWorkload.spin'),
        sub('java.hprof.txt', 'CPU TIME (ms) END', 'HPROF ERROR: method on stack top != method exiting\nCPU TIME (ms) END'),
        sub('stdout.txt', 'EXPECT spin_calls=7\n', '')]),
    ('hprof-monitor', W['hprof'], 'monitor', E, hprof_monitor, [
        sub('java.hprof.txt', 'SuiteLock@', 'Object@'),
        drop_line('java.hprof.txt', '^MONITOR DUMP END')]),
    ('hprof-dump', W['hprof'], 'dump', E, hprof_dump, [
        drop_line('java.hprof.txt', '^OBJ b1468290'),
        sub('java.hprof.txt', 'ROOT b04346a0 (', 'ROOT b04346a0 ('.replace('ROOT', 'BOGUS')),
        drop_line('java.hprof.txt', '^HEAP DUMP END')]),
    ('jcov-typeM', W['jcov'], 'typeM', E, lambda: jcov('typeM'), [
        sub('java.jcov', '\t\t7\n', '\t\t6\n'),
        sub('java.jcov', '\t\t10\n', '\t\t9\n'),
        sub('java.jcov', 'JCOV-DATA-FILE-VERSION', 'JCOV')]),
    ('jcov-typeB', W['jcov'], 'typeB', E, lambda: jcov('typeB'), [
        sub('java.jcov', '\t\t2\n8', '\t\t3\n8'),
        sub('java.jcov', '\t\t8\n', '\t\t7\n')]),
    ('oprofile-jit', W['oprofile'], 'jit', E, oprofile, [
        sub('opagent.log', 'size=412', 'size=0'),
        sub('opagent.log', 'map=rwxp', 'map=rw-p'),
        drop_line('opagent.log', 'op_close_agent')]),
    ('starj-all', W['starj'], 'all', E, starj, [
        sub('events.txt', 'thread_name=Worker-2', 'thread_name=Worker-3'),
        drop_line('events.txt', r'class_id=11, is_array=0'),
        drop_line('events.txt', 'METHOD_ENTRY2'),
        drop_line('events.txt', 'MONITOR_CONTENDED_ENTER'),
        sub('analyzer.rc', '0', '1')]),
    ('niagara-prof', W['niagara'], 'prof', E, niagara, [
        sub('niag_prof0.txt', 'makeItem (line:37)', 'makeItem (line:-1)'),
        sub('niag_prof0.txt', 'Live: 48 (bytes)', 'Live: 72 (bytes)'),
        sub('niag_prof0.txt', 'Thread: Worker-1', 'Thread: Worker-3'),
        sub('rc.txt', '0', '255')]),
    ('tau-profile', newtools.check_tau, 'profile', E, lambda: tau('profile'), [
        sub('profile.0.0.1', '7 0 50 50', '6 0 50 50'),
        sub('profile.0.0.2', '3 3 1 2', '2 3 1 2'),
        sub('profile.0.0.1', '1 10 5 20', '1 10 25 20'),
        sub('stdout.txt', 'WORKLOAD-DONE', 'TAU: Runtime overlap: found x\nWORKLOAD-DONE'),
        sub('profile.0.0.3', 'THREAD=Worker-2', 'THREAD=Worker-1'),
        remove('profile.0.0.4'),
        lambda f: f.update({'profile.0.0.5': tau_file({'DestroyJavaVM': 1}, {}), 'profile.0.0.6': tau_file({'DestroyJavaVM': 1}, {})}),
        lambda f: f.update({'profile.0.0.5': tau_file({'': 1}, {})})]),
    ('tau-sigquit', newtools.check_tau, 'sigquit', E, lambda: tau('sigquit'), [
        remove('dump.0.0.1'),
        sub('sigquit.txt', '1.3\n', '')]),
    ('bhavaya-lib-only', newtools.check_bhavaya, 'lib-only', {}, bhavaya, [
        sub('stdout.txt', 'has entered this monitor: 6 times', 'has entered this monitor: 2 times'),
        sub('stdout.txt', 'Owner thread: 0x7f0(  ThreadName = [Thread-0]', 'Owner thread: 0x7f1(  ThreadName = [Thread-1]'),
        sub('stdout.txt', 'awaiting entry to this monitor: 6', 'awaiting entry to this monitor: 5'),
        sub('stdout.txt', 'awaiting notify() on the monitor: 1', 'awaiting notify() on the monitor: 0'),
        sub('stdout.txt', 'ThreadDumpDemo.java:51)', 'ThreadDumpDemo.java:50)'),
        sub('stdout.txt', 'RELEASED 7/7', 'RELEASED 6/7'),
        sub('stdout.txt', 'DEMO-DONE', '')]),
    ('nenya-lib-only', newtools.check_nenya, 'lib-only', {}, nenya, [
        sub('stdout.txt', 'gc_frame=0', 'gc_frame=1'),
        sub('stdout.txt', 'gc_overflow=0', 'gc_overflow=8'),
        sub('stdout.txt', 'gc_enabled=4', 'gc_enabled=0'),
        sub('stdout.txt', 'EXPECT java=17\n', ''),
        sub('stdout.txt', 'initialized=true', 'initialized=false')]),
    ('nenya-lib-only-jdk25', newtools.check_nenya, 'lib-only', {}, nenya25, [
        sub('stdout.txt', 'gc_frame=0', 'gc_frame=2'),
        sub('stdout.txt', 'overflow_ms=2300', 'overflow_ms=10400'),
        sub('stderr.txt', 'DisableGC held', 'DisableGC kept'),
        lambda f: f.update({'stderr.txt': f['stderr.txt'] * 2}),
        sub('stdout.txt', 'gc_enabled=4', 'gc_enabled=0')]),
    ('samiam-agent', newtools.check_samiam, 'agent', {}, samiam, [
        sub('stdout.txt', 'profilerRunning() ? true', 'profilerRunning() ? false'),
        sub('stdout.txt', 'elapsed cpu profile: 900000000', 'elapsed cpu profile: 0'),
        sub('stdout.txt', 'elapsed cpu profile: 900000000', 'elapsed cpu profile: 2900000000'),
        lambda f: f.update({'stdout.txt': 'Error occurred during initialization of VM\n', 'rc.txt': '1\n',
                            'stderr.txt': 'jvmpi-shim: error: refused\n'})]),
]


def run_case(checker, mode, e, files):
    d = tempfile.mkdtemp(prefix='suite-selftest-')
    try:
        for name, body in files.items():
            with open(os.path.join(d, name), 'w') as f:
                f.write(body)
        run = checks.expectations(os.path.join(d, 'stdout.txt'))
        return checks.verdict(checker, mode, d, e, run)
    finally:
        shutil.rmtree(d)


def main():
    good = bad_caught = bad_total = 0
    for name, checker, mode, e, make, corruptions in CASES:
        v = run_case(checker, mode, e, make())
        good += v == 'PASS'
        print('%-4s selftest %-18s %s' % (v.split(' ')[0], name, v.partition(' ')[2]))
        for i, corrupt in enumerate(corruptions):
            files = make()
            corrupt(files)
            v = run_case(checker, mode, e, files)
            bad_total += 1
            if v.startswith('FAIL'):
                bad_caught += 1
            else:
                print('CORRUPTION NOT DETECTED: %s #%d' % (name, i + 1))
    jg, jn, jc, jt = main_javac()
    good, n, bad_caught, bad_total = good + jg, len(CASES) + jn, bad_caught + jc, bad_total + jt
    ok = good == n and bad_caught == bad_total
    print('SELFTEST-SUMMARY pass=%d total=%d corruptions-detected=%d/%d' % (good, n, bad_caught, bad_total))
    return ok


# ------------------------------------------------------------------------------------------ javac
def javac_files(extra):
    f = {'base/rc.txt': '1\n', 'base/classes.txt': '157\n', 'rc.txt': '1\n', 'classes.txt': '157\n',
         'stdout.txt': '', 'stderr.txt': 'Foo.java:3: error: cannot find symbol\n'}
    f.update(extra)
    return f


def javac_hprof_samples():
    return javac_files({'java.hprof.txt': HPROF_HEAD + (
        'TRACE 1:\n\tcom.sun.tools.javac.parser.JavacParser.term(JavacParser.java:100)\n'
        'TRACE 2:\n\tjava.lang.ClassLoader.defineClass1(ClassLoader.java:Native method)\n'
        'CPU SAMPLES BEGIN (total = 10) Mon Dec  7 12:00:01 2026\nrank   self  accum   count trace method\n'
        '   1 60.00% 60.00%       6     2 java.lang.ClassLoader.defineClass1\n'
        '   2 40.00% 100.00%      4     1 com.sun.tools.javac.parser.JavacParser.term\nCPU SAMPLES END\n')})


def javac_tau():
    return javac_files({'profile.0.0.1': tau_file({'main': 1}, {'com.sun.tools.javac.Main  main ([Ljava/lang/String;)V': (1, 9, 5, 900)})})


def javac_oprofile():
    return javac_files({'opagent.log': 'op_open_agent()\nop_write_native_code(0x1, "Lcom/sun/tools/javac/util/Name;hashCode()I", '
                                       'vma=0x7f01, code=0x7f01, size=64) map=r-xp [anon]\nop_close_agent(0x1) loads=1 unloads=0\n'})


def javac_default(c, tool, mode, rd, base, section):
    checks.javac_common(c, rd, base)
    checks.javac_tool(c, tool, mode, rd, section)


JAVAC_CASES = [
    ('javac-hprof-samples', javac_default, 'hprof', 'samples', 'CPU SAMPLES', javac_hprof_samples, [
        sub('java.hprof.txt', '      4     1 com.sun', '      1     1 com.sun'),
        sub('classes.txt', '157', '150'),
        sub('rc.txt', '1', '134'),
        sub('stderr.txt', 'cannot find symbol', 'cannot find symbol\nHPROF ERROR: bad trace')]),
    ('javac-oprofile', javac_default, 'oprofile', 'jit', None, javac_oprofile, [
        sub('opagent.log', 'size=64', 'size=0'),
        drop_line('opagent.log', 'op_close_agent')]),
    ('javac-tau', newtools.check_tau_javac, 'tau', 'profile', None, javac_tau, [
        sub('profile.0.0.1', '" 1 9 5 900', '" 2 9 5 900'),
        sub('profile.0.0.1', '" 1 9 5 900', '" 1 9 905 900'),
        sub('stderr.txt', 'symbol\n', 'symbol\nTAU: Runtime overlap: found x\n')]),
]


def run_javac_case(fn, tool, mode, section, files):
    d = tempfile.mkdtemp(prefix='suite-selftest-')
    try:
        os.makedirs(os.path.join(d, 'base'))
        for name, body in files.items():
            with open(os.path.join(d, name), 'w') as f:
                f.write(body)
        return checks.verdict(fn, tool, mode, d, os.path.join(d, 'base'), section)
    finally:
        shutil.rmtree(d)


def main_javac():
    good = caught = total = 0
    for name, fn, tool, mode, section, make, corruptions in JAVAC_CASES:
        v = run_javac_case(fn, tool, mode, section, make())
        good += v == 'PASS'
        print('%-4s selftest %-18s %s' % (v.split(' ')[0], name, v.partition(' ')[2]))
        for i, corrupt in enumerate(corruptions):
            files = make()
            corrupt(files)
            total += 1
            if run_javac_case(fn, tool, mode, section, files).startswith('FAIL'):
                caught += 1
            else:
                print('CORRUPTION NOT DETECTED: %s #%d' % (name, i + 1))
    return good, len(JAVAC_CASES), caught, total
