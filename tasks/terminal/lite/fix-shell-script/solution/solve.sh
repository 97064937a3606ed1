#!/bin/bash
set -e
cat > /app/backup.sh <<'EOF'
#!/bin/bash
mkdir -p /app/backup
for f in /app/docs/*.txt; do cp "$f" /app/backup/; done
EOF
bash /app/backup.sh
