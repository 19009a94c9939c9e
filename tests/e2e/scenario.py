"""How the e2e checkers run one named scenario: a scenario raises Failure (through expect) with
what went wrong; the run prints PASS or FAIL with the scenario's name and, on failure, where its
files were kept."""
import shutil


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def run(scenarios, name, ctx, keep):
    """Runs scenarios[name](ctx); its exit status. ctx.tmp is removed unless it failed or keep."""
    try:
        rc = scenarios[name](ctx) or 0
    except Failure as e:
        print("FAIL %s: %s" % (name, e))
        print("(files in %s)" % ctx.tmp)
        return 1
    if not keep:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    if rc == 0:
        print("PASS %s" % name)
    return rc
