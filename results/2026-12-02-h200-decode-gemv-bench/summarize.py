#!/usr/bin/env python3
"""Per design, the best of the call's two runs (us a launch, 50 launches back to back) for every shape, with a
TinyLlama layer's four products summed (q/k/v, output, gate/up, down) and GPT-2's. Usage: summarize.py call2"""
import collections, re, sys

SHAPES = ['llama.qkv', 'llama.o', 'llama.gate_up', 'llama.down', 'llama.lm_head',
          'gpt2.qkv', 'gpt2.o', 'gpt2.fc1', 'gpt2.fc2', 'gpt2.lm_head']
d, errs = collections.defaultdict(dict), collections.defaultdict(float)
for f in ('bench1.txt', 'bench2.txt'):
    for line in open(f'{sys.argv[1]}/{f}'):
        if line.startswith(('#', 'shape')):
            continue
        t = line.split()
        for j in range(2, len(t) - 1):
            if t[j] in ('pdl', '-') and re.match(r'^[0-9.]+$', t[j + 1]):
                name = ' '.join(t[1:j]) + ('' if t[j] == '-' else ' pdl')
                d[name].setdefault(t[0], []).append(float(t[j + 1]))
                if len(t) > j + 3:
                    errs[name] = max(errs[name], float(t[j + 3]))
                break
print('%-34s' % 'design (us)', ' '.join('%8s' % s.replace('llama.', 'l.').replace('gpt2.', 'g.')[:8] for s in SHAPES),
      '  l.layer g.layer maxerr')
for name, v in sorted(d.items(), key=lambda kv: sum(min(kv[1][s]) for s in SHAPES[:4])):
    m = [min(v[s]) for s in SHAPES]
    print('%-34s' % name, ' '.join('%8.2f' % x for x in m), '  %7.1f %7.1f %s' % (sum(m[:4]), sum(m[5:9]), errs.get(name, '')))
