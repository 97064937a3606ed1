#!/bin/bash
set -e
python3 - <<'EOF'
import re
p='/app/settings.ini'
s=open(p).read()
head,sep,rest=s.partition('[network]')
body,sep2,tail=rest.partition('\n[')
body=re.sub(r'(?m)^timeout *=.*$','timeout = 30',body)
open(p,'w').write(head+sep+body+sep2+tail)
EOF
