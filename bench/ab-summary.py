# ab-summary.py OUTPUT [BASELINE]: the rounds printed by run-ab-multi.sh, as median ratios to BASELINE (default ref).
import sys, statistics as st
rows=[l for l in open(sys.argv[1]) if l.startswith('R ')]
ref=sys.argv[2] if len(sys.argv)>2 else 'ref'
data=[]
for l in rows:
    d={}
    for part in l.split('|')[1:]:
        s,tps,tx,ticks=part.split(); d[s]=(float(tps),float(tx),float(ticks))
    data.append(d)
names=list(data[0].keys())
print(f"rounds {len(data)}")
for s in names:
    if s==ref: continue
    r=[d[s][0]/d[ref][0] for d in data]; c=[(d[s][2]/d[s][1])/(d[ref][2]/d[ref][1]) for d in data]
    print(f"{s:10s} tps/{ref} median {st.median(r):.3f} ({sum(x<1 for x in r)}/{len(r)} below 1)  backendCPU/tx ratio median {st.median(c):.3f} ({sum(x>1 for x in c)}/{len(c)} above 1)")
for s in names:
    tx=sum(d[s][1] for d in data); t=sum(d[s][2] for d in data)
    print(f"{s:10s} mean tps {st.mean(d[s][0] for d in data):.0f}  backend CPU us/tx {t*1e4/tx:.1f}")
