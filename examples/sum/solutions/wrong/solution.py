def solve(numbers):
    # A plausible bug: negative numbers are counted by magnitude.
    return sum(abs(n) for n in numbers)
