"""The Python tests' check(), as tests/tp_test.h is the C tests': a failed condition is printed
and remembered, never raised, so one run reports every failure. A test imports `check` and
`failures` (the list; its length decides the exit status)."""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond
