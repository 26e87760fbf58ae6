# 0.3 API: exec_python, exec_shell, exec_json
from agentnest import Sandbox

with Sandbox() as sb:
    assert sb.exec_python("print(6 * 7)").stdout == "42\n"
    assert sb.exec_shell("x=5; echo $((x + 1))").stdout == "6\n"
    assert sb.exec_json("import json; print(json.dumps({'a': [1, 2]}))") == {"a": [1, 2]}
print("ok")
