#!/bin/bash
set -e
printf 'app: main.o util.o\n\tgcc -o app main.o util.o\n\n%%.o: %%.c\n\tgcc -c -o $@ $<\n\nclean:\n\trm -f app *.o\n' > /app/proj/Makefile && make -C /app/proj
