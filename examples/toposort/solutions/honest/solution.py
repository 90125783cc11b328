import heapq


def toposort(n, edges):
    # Kahn's algorithm, taking the smallest ready node first.
    indegree = [0] * n
    succ = [[] for _ in range(n)]
    for u, v in edges:
        succ[u].append(v)
        indegree[v] += 1
    ready = [u for u in range(n) if indegree[u] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in succ[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, v)
    return order
