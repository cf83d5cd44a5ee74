"""The spreadsheet's formula calculator: tokenize, convert to postfix (shunting-yard), evaluate.

Formulas hold numbers, cell-free variables (`rate`, `qty`), + - * / ^, unary minus and parentheses.
`^` is exponentiation and, as in maths, groups to the right: 2^3^2 is 2^(3^2).
"""

import re

TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|([A-Za-z_]\w*)|(.))")
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "^": 4}
RIGHT_ASSOC = {"^", "neg"}


class FormulaError(ValueError):
    """A formula that cannot be read or computed; the message says where."""


def tokenize(text):
    """[(kind, value)] with kind one of num, name, op, lparen, rparen."""
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        number, name, other = m.groups()
        if number is not None:
            tokens.append(("num", float(number)))
        elif name is not None:
            tokens.append(("name", name))
        elif other in PRECEDENCE:
            tokens.append(("op", other))
        elif other == "(":
            tokens.append(("lparen", other))
        elif other == ")":
            tokens.append(("rparen", other))
        else:
            raise FormulaError(f"unexpected {other!r} at column {m.start(3) + 1}")
        pos = m.end()
    return tokens


def mark_unary(tokens):
    """A minus at the start, after an operator or after '(' negates: it becomes the `neg` operator."""
    out = []
    for kind, value in tokens:
        if kind == "op" and value == "-" and (not out or out[-1][0] in ("op", "lparen")):
            out.append(("op", "neg"))
        else:
            out.append((kind, value))
    return out


def to_postfix(tokens):
    """Shunting-yard: operators leave the stack while they bind at least as tightly (strictly, for ^)."""
    output, stack = [], []
    for kind, value in mark_unary(tokens):
        if kind in ("num", "name"):
            output.append((kind, value))
        elif kind == "op" and value == "neg":
            stack.append((kind, value))  # a prefix operator: nothing on its left to hand over yet
        elif kind == "op":
            while stack and stack[-1][0] == "op":
                top = stack[-1][1]
                if PRECEDENCE[top] > PRECEDENCE[value] or (
                        PRECEDENCE[top] == PRECEDENCE[value] and value not in RIGHT_ASSOC):
                    output.append(stack.pop())
                else:
                    break
            stack.append((kind, value))
        elif kind == "lparen":
            stack.append((kind, value))
        else:
            while stack and stack[-1][0] != "lparen":
                output.append(stack.pop())
            if not stack:
                raise FormulaError("unbalanced ')'")
            stack.pop()
    while stack:
        if stack[-1][0] == "lparen":
            raise FormulaError("unbalanced '('")
        output.append(stack.pop())
    return output


def evaluate(postfix, variables=None):
    """The value of a postfix token list; names come from `variables`."""
    variables = variables or {}
    stack = []
    for kind, value in postfix:
        if kind == "num":
            stack.append(value)
        elif kind == "name":
            if value not in variables:
                raise FormulaError(f"unknown name {value!r}")
            stack.append(float(variables[value]))
        elif value == "neg":
            stack.append(-stack.pop())
        else:
            if len(stack) < 2:
                raise FormulaError(f"operator {value!r} is missing an operand")
            right, left = stack.pop(), stack.pop()
            if value == "/" and right == 0:
                raise FormulaError("division by zero")
            stack.append({"+": left + right, "-": left - right, "*": left * right,
                          "/": left / right if right else 0.0, "^": left ** right}[value])
    if len(stack) != 1:
        raise FormulaError("malformed formula")
    return stack[0]


def calculate(text, **variables):
    """Tokenize, convert and evaluate in one go: calculate('qty * rate', qty=3, rate=2.5) == 7.5."""
    return evaluate(to_postfix(tokenize(text)), variables)
