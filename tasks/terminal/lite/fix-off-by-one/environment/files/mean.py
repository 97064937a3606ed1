import sys
values = [float(v) for v in sys.argv[1:]]
print(sum(values) / (len(values) - 1) if len(values) > 1 else sum(values) / len(values))
