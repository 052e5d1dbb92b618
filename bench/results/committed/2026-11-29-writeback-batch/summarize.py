import json, statistics as st, sys
r=json.load(open(sys.argv[1]))
jobs=[]; systems=[]
for x in r:
    if x['job'] not in jobs: jobs.append(x['job'])
    if x['system'] not in systems: systems.append(x['system'])
def med(v): return st.median(v) if v else None
print("| job | " + " | ".join(systems) + " |")
print("|---|" + "---|"*len(systems))
for j in jobs:
    row=[]
    for s in systems:
        xs=[x for x in r if x['job']==j and x['system']==s]
        bw=sorted(x['bw_mib_s'] for x in xs)
        row.append(f"{med(bw):.0f} ({bw[0]:.0f}-{bw[-1]:.0f})")
    print(f"| {j} MiB/s | " + " | ".join(row) + " |")
print()
print("| job | system | stored/written | fences/write | writes | batches | rows whole | rows patched | rows before journal |")
print("|---|---|---|---|---|---|---|---|---|")
for j in jobs:
    for s in systems:
        xs=[x for x in r if x['job']==j and x['system']==s and x['media']]
        if not xs: continue
        m=[x['media'] for x in xs]
        spw=med([y.get('stored_per_written',0) for y in m]); fpw=med([y.get('fences_per_write',0) for y in m])
        w=med([y['writes'] for y in m]); b=med([y.get('batches_committed',0) for y in m])
        rw=med([y.get('rows_written_whole',0) for y in m]); rp=med([y.get('rows_patched',0) for y in m]); rn=med([y.get('rows_written_before_journal',0) for y in m])
        print(f"| {j} | {s} | {spw:.2f} | {fpw:.2f} | {w:.0f} | {b:.0f} | {rw:.0f} | {rp:.0f} | {rn:.0f} |")
loads=[x['load1'] for x in r]
print(f"\nload1 during the runs: {min(loads)}-{max(loads)} (median {med(loads)}) on {__import__('os').cpu_count()} cores")
