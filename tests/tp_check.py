"""The Python tests' check(), as tests/tp_test.h is the C tests': a failed condition is printed
and remembered, never raised, so one run reports every failure. A test imports `check` and
`failures` (the list; its length decides the exit status, exit_status() says it)."""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def exit_status():
    """The test's exit status, said: "N failure(s)" and 1, or "ok" and 0."""
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0
