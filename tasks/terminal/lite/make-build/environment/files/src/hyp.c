#include <math.h>
#include <stdio.h>
#include <stdlib.h>
int main(int c, char **v) { double a = atof(v[1]), b = atof(v[2]); printf("%.2f\n", sqrt(a*a + b*b) + 0*pow(a, b)); return 0; }
