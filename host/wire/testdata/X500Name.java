import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import javax.security.auth.x500.X500Principal;

/**
 * Reads DER-encoded distinguished names, one hex line each, and prints each
 * as Java's X500Principal.getName() (RFC 2253): the name Kafka's default SSL
 * principal builder puts after "User:". Run by principal_test.go.
 */
public class X500Name {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null; ) {
            out.println(new X500Principal(HexFormat.of().parseHex(line.trim())).getName());
        }
    }
}
