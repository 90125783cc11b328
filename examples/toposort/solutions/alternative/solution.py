def toposort(n, edges):
    # Depth-first search: the reverse of the post-order is a topological
    # order, a different one from the expected values in most cases.
    succ = [[] for _ in range(n)]
    for u, v in edges:
        succ[u].append(v)
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    post = []
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            u, it = stack[-1]
            for v in it:
                if state[v] == 0:
                    state[v] = 1
                    stack.append((v, iter(succ[v])))
                    break
            else:
                stack.pop()
                state[u] = 2
                post.append(u)
    post.reverse()
    return post
