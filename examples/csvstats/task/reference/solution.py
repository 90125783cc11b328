import csv
import json

with open("/input/data.csv", newline="") as f:
    rows = list(csv.reader(f))
header, data = rows[0], rows[1:]
stats = {}
for i, name in enumerate(header):
    try:
        values = [float(r[i]) for r in data]
    except (ValueError, IndexError):
        continue
    if not values:
        continue
    stats[name] = {"min": min(values), "max": max(values), "mean": sum(values) / len(values)}
with open("/output/stats.json", "w") as f:
    json.dump(stats, f)
