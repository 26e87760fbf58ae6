# 0.3 API: python_session(): globals persist, result = repr of a final expression, error = traceback
from agentnest import Sandbox

with Sandbox() as sb:
    s = sb.python_session()
    assert s.run("x = 41").ok
    r = s.run("x + 1")
    assert r.result == "42", r
    e = s.run("1/0")
    assert not e.ok and "ZeroDivisionError" in e.error
    s.close()
print("ok")
