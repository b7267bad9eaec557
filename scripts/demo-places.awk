# The demo's places (scripts/demo.sh).
#
# mode=generate: prints a CSV of n places with ids p00001…, titles such as "Café Aurora", a category and a
#                position in central Lisbon.
# mode=write:    reads that CSV, then, about `rate` times a second, sends one transaction to `meridian apply -`:
#                a move (45%), a rename (25%), an insert (15%) or a delete (15%), sometimes two at once.
#                Runs until it is killed or meridian fails to start.
#
# Categories: 0 café, 1 restaurant, 2 museum, 3 shop, 4 park, 5 viewpoint.

function pick(list,    parts, k) {
    k = split(list, parts, "|")
    return parts[1 + int(rand() * k)]
}

function title(category) {
    if (category == 0) return pick("Café|Pastelaria|Confeitaria|Padaria|Café") " " pick(noun)
    if (category == 1) return pick("Tasca|Restaurante|Taberna|Cervejaria|Marisqueira") " " pick(noun)
    if (category == 2) return pick("Museu|Galeria|Casa-Museu|Centro de Arte") " " pick(noun)
    if (category == 3) return pick("Livraria|Mercearia|Loja|Retrosaria|Chapelaria") " " pick(noun)
    if (category == 4) return pick("Jardim|Parque|Horta|Largo") " " pick(noun)
    return pick("Miradouro|Terraço|Torre|Mirante") " " pick(noun)
}

function position() {
    lat = sprintf("%.6f", 38.700 + rand() * 0.035)
    lon = sprintf("%.6f", -9.165 + rand() * 0.045)
}

function clamp(v, lo, hi) { return v < lo ? lo : (v > hi ? hi : v) }

function send(lines,    cmd) {
    cmd = meridian " apply - >/dev/null 2>>\"" errlog "\""
    printf "%s", lines | cmd
    if (close(cmd) != 0) failures++; else failures = 0
}

function move(i) {
    lats[i] = sprintf("%.6f", clamp(lats[i] + (rand() - 0.5) * 0.001, 38.700, 38.735))
    lons[i] = sprintf("%.6f", clamp(lons[i] + (rand() - 0.5) * 0.001, -9.165, -9.120))
    return "{\"op\":\"update\",\"entity\":\"Point\",\"id\":\"" ids[i] "\",\"values\":{\"latitude\":" lats[i] ",\"longitude\":" lons[i] ",\"updatedAt\":\"now\"}}\n"
}

function rename(i,    c) {
    c = int(rand() * 6)
    return "{\"op\":\"update\",\"entity\":\"Point\",\"id\":\"" ids[i] "\",\"values\":{\"title\":\"" title(c) "\",\"category\":" c ",\"updatedAt\":\"now\"}}\n"
}

function add(    c) {
    c = int(rand() * 6)
    position()
    count++
    ids[count] = sprintf("w%06d", ++added)
    lats[count] = lat
    lons[count] = lon
    return "{\"op\":\"insert\",\"entity\":\"Point\",\"id\":\"" ids[count] "\",\"values\":{\"title\":\"" title(c) "\",\"category\":" c ",\"latitude\":" lat ",\"longitude\":" lon ",\"updatedAt\":\"now\"}}\n"
}

function remove(i,    id) {
    id = ids[i]
    ids[i] = ids[count]; lats[i] = lats[count]; lons[i] = lons[count]
    delete ids[count]; delete lats[count]; delete lons[count]
    count--
    return "{\"op\":\"delete\",\"entity\":\"Point\",\"id\":\"" id "\"}\n"
}

function operation(    r, i) {
    if (count < 2) return add()
    i = 1 + int(rand() * count)
    r = rand()
    if (r < 0.45) return move(i)
    if (r < 0.70) return rename(i)
    if (r < 0.85) return add()
    return remove(i)
}

BEGIN {
    srand(seed + 0)
    noun = "Aurora|Estrela|Tejo|Alfama|Chiado|Bairro Alto|Graça|Rossio|Baixa|Príncipe Real|Santa Catarina|Lusitano|Fado|Azulejo|Bica|Galo|Sardinha|Pessoa|Camões|Saudade|Marés|Elétrico|Castelo|Sé|Ribeira|Oriente|Andorinha|Limoeiro|Jacarandá|Ginjinha"
    FS = ","
    if (mode == "generate") {
        print "id,title,category,latitude,longitude,updatedAt"
        for (k = 1; k <= n; k++) {
            c = int(rand() * 6)
            position()
            printf "p%05d,%s,%d,%s,%s,now\n", k, title(c), c, lat, lon
        }
        exit 0
    }
    interval = rate > 0 ? 1 / rate : 0.25
}

mode == "write" && NR > 1 {
    count++
    ids[count] = $1; lats[count] = $4 + 0; lons[count] = $5 + 0
}

END {
    if (mode != "write") exit 0
    while (1) {
        tx = operation()
        if (rand() < 0.2) tx = tx operation()
        send(tx)
        if (failures > 20) {
            print "demo writer: meridian apply keeps failing; its last errors (all in " errlog "):" > "/dev/stderr"
            close("/dev/stderr")
            system("tail -n 5 \"" errlog "\" >&2")
            exit 1
        }
        system("sleep " interval)
    }
}
